#include "common/subprocess.h"

#include "common/paths.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

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

/// A middle process spawns a tied `sleep` with `options` and is then
/// killed. Returns whether the child went too.
bool childDiesWithItsParent(const SpawnOptions& options) {
  int p[2];
  if (pipe(p) != 0) return false;
  pid_t middle = fork();
  if (middle == 0) {
    auto pid = spawnTied({"/bin/sleep", "30"}, options);
    if (!pid) _exit(1);
    (void)!write(p[1], &*pid, sizeof(pid_t));
    pause();
    _exit(0);
  }
  close(p[1]);
  pid_t child = 0;
  bool started = read(p[0], &child, sizeof child) == static_cast<ssize_t>(sizeof child) && kill(child, 0) == 0;
  close(p[0]);
  kill(middle, SIGKILL);
  waitpid(middle, nullptr, 0);
  if (!started) return false;
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = kill(child, 0) != 0;
    if (!gone) usleep(10000);
  }
  return gone;
}

TEST(SpawnTied, ChildDiesWithItsParent) {
  EXPECT_TRUE(childDiesWithItsParent({})) << "tied child outlived its parent";
}

// A beforeExec step that changes the uid clears the parent-death signal
// (as the VM jail's does); spawnTied arms it again.
TEST(SpawnTied, ChildDiesWithItsParentAfterBeforeExecChangedItsUid) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the step changes the uid";
  SpawnOptions options;
  options.beforeExec = [] { return syscall(SYS_setresuid, 65534, 65534, 65534) == 0 ? 0 : errno; };
  EXPECT_TRUE(childDiesWithItsParent(options)) << "the child outlived its parent after its uid changed";
  options.newPidNamespace = true;
  EXPECT_TRUE(childDiesWithItsParent(options)) << "the same in a new PID namespace";
}

// In its own PID namespace the child is pid 1 and cannot reach its parent.
TEST(SpawnTied, ANewPidNamespaceHidesEveryOtherProcess) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: CLONE_NEWPID needs CAP_SYS_ADMIN";
  auto dir = TempDir::create("/tmp", "airlock-spawn-");
  ASSERT_TRUE(dir);
  const std::string out = dir->path() + "/out";
  SpawnOptions options;
  options.stdoutPath = out;
  options.newPidNamespace = true;
  auto pid = spawnTied({"/bin/sh", "-c", "echo $$; kill -0 " + std::to_string(getpid()) + " 2>/dev/null || echo hidden"},
                       options);
  ASSERT_TRUE(pid) << pid.error().message;
  int status = 0;
  waitpid(*pid, &status, 0);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "1\nhidden\n");
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
