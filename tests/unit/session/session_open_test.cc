// Session::open: the identity and the directory of a new session.

#include <stdlib.h>
#include <sys/stat.h>

#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "session/session.h"
#include "test_util.h"

namespace airlock::session {
namespace {

class SessionOpen : public ::testing::Test {
 protected:
  TempDir state_ = workspace::test::scratch(), workspace_ = workspace::test::scratch();
};

// A session id is its start time plus 64 random bits: ids are unique and not
// guessable, so no other process can pre-create the next session's directory.
TEST_F(SessionOpen, IdCarriesSixtyFourRandomBits) {
  std::set<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    auto s = Session::open(state_.path(), workspace_.path(), false);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE(std::regex_match((*s)->id(), std::regex("[0-9]{8}-[0-9]{6}-[0-9a-f]{16}"))) << (*s)->id();
    ids.insert((*s)->id());
  }
  EXPECT_EQ(ids.size(), 20u);
}

// The directory is made by this session alone, private to the user.
TEST_F(SessionOpen, DirectoryIsNewAndPrivate) {
  auto s = Session::open(state_.path(), workspace_.path(), false);
  ASSERT_TRUE(s) << s.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((*s)->dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ((*s)->dir(), state_.path() + "/sessions/" + (*s)->id());
}

}  // namespace
}  // namespace airlock::session
