// confineBeforeExec: what a confined child (as QEMU is started) is left with,
// read from its own /proc/self/status after an exec, as root and as a user.

#include "vm/jail.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace airlock::vm {
namespace {

/// The value of `field` ("CapEff") in `status` (a /proc/PID/status text).
std::string statusField(const std::string& status, const std::string& field) {
  auto at = status.find("\n" + field + ":");
  if (at == std::string::npos) return "";
  at = status.find_first_not_of(" \t", at + field.size() + 2);
  return status.substr(at, status.find('\n', at) - at);
}

/// /proc/self/status of `cat` exec'd after confineBeforeExec, as uid `uid`
/// (-1: the test's own).
std::string confinedStatus(int uid) {
  int pipeFds[2];
  EXPECT_EQ(::pipe(pipeFds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipeFds[1], 1);
    if (uid >= 0 && (::setgid(uid) != 0 || ::setuid(uid) != 0)) _exit(120);
    if (confineBeforeExec() != 0) _exit(121);
    ::execl("/bin/cat", "cat", "/proc/self/status", nullptr);
    _exit(122);
  }
  ::close(pipeFds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipeFds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(pipeFds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return out;
}

TEST(Jail, RootExecsWithoutCapabilitiesAndCannotGainAny) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: checks that uid 0 loses its capabilities";
  std::string status = confinedStatus(-1);
  EXPECT_EQ(statusField(status, "Uid").substr(0, 1), "0");
  EXPECT_EQ(statusField(status, "CapEff"), "0000000000000000");
  EXPECT_EQ(statusField(status, "CapPrm"), "0000000000000000");
  EXPECT_EQ(statusField(status, "CapInh"), "0000000000000000");
  EXPECT_EQ(statusField(status, "CapBnd"), "0000000000000000");
  EXPECT_EQ(statusField(status, "CapAmb"), "0000000000000000");
  EXPECT_EQ(statusField(status, "NoNewPrivs"), "1");
}

TEST(Jail, UserExecsWithNoNewPrivs) {
  int uid = ::geteuid() == 0 ? 65534 : -1;  // as root, become nobody first
  std::string status = confinedStatus(uid);
  EXPECT_EQ(statusField(status, "CapEff"), "0000000000000000");
  EXPECT_EQ(statusField(status, "NoNewPrivs"), "1");
}

TEST(Jail, NoCoreDumps) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (confineBeforeExec() != 0) _exit(121);
    rlimit core{};
    ::getrlimit(RLIMIT_CORE, &core);
    _exit(core.rlim_cur == 0 && core.rlim_max == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace airlock::vm
