// Session::open: the identity and the directory of a new session.

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "common/fd.h"
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
    auto s = Session::open(state_.path(), workspace_.path());
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE(std::regex_match((*s)->id(), std::regex("[0-9]{8}-[0-9]{6}-[0-9a-f]{16}"))) << (*s)->id();
    ids.insert((*s)->id());
  }
  EXPECT_EQ(ids.size(), 20u);
}

// The directory is made by this session alone, private to the user.
TEST_F(SessionOpen, DirectoryIsNewAndPrivate) {
  auto s = Session::open(state_.path(), workspace_.path());
  ASSERT_TRUE(s) << s.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((*s)->dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ((*s)->dir(), state_.path() + "/sessions/" + (*s)->id());
}

// Issue 17 item 2: sessions on one workspace run side by side. Each owns its
// directory's run lock (how `system prune` and `ls` tell a running session),
// and all of them hold the workspace lock shared, so `state rm` (exclusive,
// without waiting) is refused while any of them runs.
TEST_F(SessionOpen, TwoSessionsOnOneWorkspaceRunSideBySide) {
  auto a = Session::open(state_.path(), workspace_.path());
  ASSERT_TRUE(a) << a.error().message;
  auto b = Session::open(state_.path(), workspace_.path());
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_NE((*a)->dir(), (*b)->dir());
  EXPECT_TRUE(sessionRunning((*a)->dir()));
  EXPECT_TRUE(sessionRunning((*b)->dir()));
  const std::string lock = lockPathFor(state_.path(), (*a)->workspace());
  auto idle = [&] {
    Fd fd(::open(lock.c_str(), O_RDWR | O_CLOEXEC));
    return fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0;
  };
  EXPECT_FALSE(idle());
  const std::string dirA = (*a)->dir();
  a->reset();
  EXPECT_FALSE(sessionRunning(dirA)) << "a closed session still counts as running";
  EXPECT_TRUE(sessionRunning((*b)->dir()));
  EXPECT_FALSE(idle()) << "the workspace looked idle while a session ran";
  b->reset();
  EXPECT_TRUE(idle());
}

}  // namespace
}  // namespace airlock::session
