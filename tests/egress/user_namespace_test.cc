// airlock's own user namespace (egress/user_namespace.h) as a login runs
// it: with supplementary groups, with and without a subordinate gid range,
// and when the namespace cannot be made at all. Each case runs in a forked
// child that becomes a test account (ensureTestAccount), since the
// namespace is for the whole process and only a user other than root
// makes one.
#include "egress/user_namespace.h"

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "airlock_process.h"
#include "common/fd.h"

namespace airlock::test {
namespace {

/// Runs `body` in a forked child as the account `uid` with its own group as
/// its one supplementary group (as a login has). Its exit code; -1 when it
/// had not ended after 20 s (then killed).
int asAccount(uid_t uid, const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    const gid_t groups[] = {uid};
    if (setgroups(1, groups) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(120);
    // As after an exec: the change of uid made the process non-dumpable,
    // which leaves /proc/self (its maps) root's.
    if (prctl(PR_SET_DUMPABLE, 1) != 0) _exit(121);
    _exit(body());
  }
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

std::string procSelf(const std::string& name) {
  auto text = readFile("/proc/self/" + name, 4096);
  return text ? *text : "";
}

class UserNamespace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to become the test accounts";
  }
};

// With a subordinate gid range (the test account has one): the namespace
// keeps the login's groups, allows setgroups and maps one subordinate gid
// besides the user's own, so virtiofsd can drop the groups.
TEST_F(UserNamespace, ALoginWithAGidRangeKeepsItsGroupsAndMayDropThem) {
  ASSERT_EQ(ensureTestAccount(4242, true), "");
  int code = asAccount(4242, [] {
    auto root = egress::becomeNamespaceRoot();
    if (!root) {
      std::fprintf(stderr, "%s\n", root.error().message.c_str());
      return 10;
    }
    if (!root->groupsLocked.empty()) return 11;
    if (procSelf("setgroups") != "allow\n") return 12;
    std::string map = procSelf("gid_map");
    if (std::count(map.begin(), map.end(), '\n') != 2) return 13;
    if (getuid() != 0 || getgid() != 0) return 14;
    if (getgroups(0, nullptr) != 1) return 15;  // kept (shown as the overflow gid)
    if (setgroups(0, nullptr) != 0) return 16;
    return 0;
  });
  EXPECT_EQ(code, 0) << "10 no namespace, 11 groups locked, 12 setgroups not allow, 13 not two gid lines, 14 not "
                        "root inside, 15 groups lost, 16 cannot drop them";
}

// Without a range the groups stay locked, and the reason names the fix.
TEST_F(UserNamespace, WithoutARangeTheGroupsStayLockedNamingTheFix) {
  ASSERT_EQ(ensureTestAccount(4243, false), "");
  int code = asAccount(4243, [] {
    auto root = egress::becomeNamespaceRoot();
    if (!root) {
      std::fprintf(stderr, "%s\n", root.error().message.c_str());
      return 10;
    }
    if (root->groupsLocked.find("/etc/subgid") == std::string::npos ||
        root->groupsLocked.find("sudo usermod --add-subgids ") == std::string::npos)
      return 11;
    if (procSelf("setgroups") != "deny\n") return 12;
    if (getuid() != 0 || getgid() != 0) return 14;
    return 0;
  });
  EXPECT_EQ(code, 0) << "10 no namespace, 11 reason without the fix, 12 setgroups not deny, 14 not root inside";
}

// When unshare fails (here: the process already has a second thread), the
// error comes back at once: the newgidmap helper forked before it exits
// instead of keeping airlock waiting.
TEST_F(UserNamespace, AFailedUnshareReturnsItsErrorWithoutWaitingOnTheGidHelper) {
  ASSERT_EQ(ensureTestAccount(4242, true), "");
  int code = asAccount(4242, [] {
    std::thread other([] { std::this_thread::sleep_for(std::chrono::seconds(1)); });
    auto root = egress::becomeNamespaceRoot();
    other.join();
    if (root) return 10;
    if (root.error().message.find("unshare") == std::string::npos) return 11;
    return 0;
  });
  EXPECT_NE(code, -1) << "becomeNamespaceRoot hung";
  EXPECT_EQ(code, 0) << "10 succeeded in a multithreaded process, 11 the error does not name unshare";
}

}  // namespace
}  // namespace airlock::test
