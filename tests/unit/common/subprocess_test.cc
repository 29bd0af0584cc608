#include "common/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

namespace airlock {
namespace {

TEST(RunCommand, CapturesStdoutStderrAndExitCode) {
  auto out = runCommand({"sh", "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 7);
  EXPECT_EQ(out->stdoutText, "out\n");
  EXPECT_EQ(out->stderrText, "err\n");
}

TEST(RunCommand, MissingProgramIsAnErrorNamingIt) {
  auto out = runCommand({"airlock-no-such-program"});
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("airlock-no-such-program"), std::string::npos);
}

TEST(RunChecked, NonZeroExitQuotesLastStderrLine) {
  auto out = runChecked({"sh", "-c", "echo first >&2; echo 'the reason' >&2; exit 2"});
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("the reason"), std::string::npos);
  EXPECT_NE(out.error().message.find("exit code 2"), std::string::npos);
}

TEST(RunCommand, SignalIsReportedAs128PlusN) {
  auto out = runCommand({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->exitCode, 128 + SIGTERM);
}

TEST(SpawnTied, ChildDiesWithItsParent) {
  // A middle process spawns a tied child and is then killed: the child must go too.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t middle = fork();
  if (middle == 0) {
    auto pid = spawnTied({"/bin/sleep", "30"}, {});
    if (!pid) _exit(1);
    (void)!write(p[1], &*pid, sizeof(pid_t));
    pause();
    _exit(0);
  }
  pid_t child = 0;
  ASSERT_EQ(read(p[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ASSERT_EQ(kill(child, 0), 0);
  kill(middle, SIGKILL);
  waitpid(middle, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = kill(child, 0) != 0;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "tied child outlived its parent";
}

TEST(SpawnTied, KeptFdSurvivesExecEvenWhenCloseOnExec) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  SpawnOptions options;
  options.keepFds = {p[1]};
  auto pid = spawnTied({"/bin/sh", "-c", "echo kept >&" + std::to_string(p[1])}, options);
  ASSERT_TRUE(pid) << pid.error().message;
  close(p[1]);
  char buf[16] = {};
  EXPECT_EQ(read(p[0], buf, sizeof buf), 5);
  EXPECT_STREQ(buf, "kept\n");
  waitpid(*pid, nullptr, 0);
  close(p[0]);
}

TEST(SpawnTied, MissingProgramFailsAtStart) {
  auto pid = spawnTied({"/nonexistent/airlock-test"}, {});
  ASSERT_FALSE(pid);
  EXPECT_NE(pid.error().message.find("/nonexistent/airlock-test"), std::string::npos);
}

}  // namespace
}  // namespace airlock
