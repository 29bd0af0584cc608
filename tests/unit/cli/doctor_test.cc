// `airlock doctor`'s session checks, on real session directories.

#include <gtest/gtest.h>

#include "cli/doctor.h"
#include "session/session.h"
#include "session/session_list.h"
#include "test_util.h"

namespace airlock::cli {
namespace {

// A session whose airlock process died is named, with the review that
// shows what it left; a running one is not dead.
TEST(DoctorDeadSessions, NamesASessionWhoseAirlockDied) {
  TempDir state = workspace::test::scratch(), workspace = workspace::test::scratch();
  EXPECT_EQ(deadSessionsCheck(state.path()).status, preflight::CheckStatus::kOk);
  auto s = session::Session::open(state.path(), workspace.path(), "fix-tests", "run-image");
  ASSERT_TRUE(s) << s.error().message;
  session::SessionMeta meta;
  meta.label = "run-image";
  meta.owner = ::getpid();
  meta.ownerStart = session::processStartTime(::getpid());
  meta.detached = true;
  ASSERT_TRUE(session::writeSessionMeta((*s)->dir(), meta));
  EXPECT_EQ(deadSessionsCheck(state.path()).status, preflight::CheckStatus::kOk) << "it runs";
  s->reset();  // its owner died before the command exited
  auto r = deadSessionsCheck(state.path());
  EXPECT_EQ(r.status, preflight::CheckStatus::kWarn);
  EXPECT_NE(r.detail.find("1 session(s) whose airlock process died: fix-tests"), std::string::npos) << r.detail;
  EXPECT_NE(r.fix.find("airlock review fix-tests"), std::string::npos) << r.fix;
}

}  // namespace
}  // namespace airlock::cli
