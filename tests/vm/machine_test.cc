// The VM library used directly: several commands in one VM, pty sizes, the
// read-write workspace share of direct mode.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "airlock_process.h"
#include "common/fd.h"
#include "guest_machine.h"
#include "vm/jail.h"
#include "vm/machine.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

class MachineTest : public MachineFixture {
 protected:
  void configure(vm::LaunchOptions& options) override { options.cpus = 2; }
  using Output = GuestOutput;
  std::shared_ptr<vm::RemoteCommand> start(const protocol::ExecRequest& request, std::shared_ptr<Output> output) {
    auto cmd = startInGuest(*machine_, request, std::move(output));
    EXPECT_TRUE(cmd) << cmd.error().message;
    return cmd ? *cmd : nullptr;
  }
};

protocol::ExecRequest shell(const std::string& script) { return shellRequest(script); }

/// The value of `field` ("CapEff") in /proc/`pid`/status.
std::string procStatus(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(field + ":")) {
      auto start = line.find_first_not_of(" \t", field.size() + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  return "";
}

// A guest that escapes into QEMU finds a process that holds no capability,
// cannot gain one and cannot spawn programs (issue 14, item 3).
TEST_F(MachineTest, QemuRunsWithoutCapabilitiesUnderItsSeccompSandbox) {
  pid_t qemu = machine_->vm().qemuPid();
  ASSERT_GT(qemu, 0);
  EXPECT_EQ(procStatus(qemu, "CapEff"), "0000000000000000");
  EXPECT_EQ(procStatus(qemu, "CapPrm"), "0000000000000000");
  if (::geteuid() == 0) {
    EXPECT_EQ(procStatus(qemu, "CapBnd"), "0000000000000000") << "uid 0 could regain capabilities";
  }
  EXPECT_EQ(procStatus(qemu, "NoNewPrivs"), "1");
  EXPECT_EQ(procStatus(qemu, "Seccomp"), "2");
  // Its own uid when airlock runs as root.
  if (::geteuid() == 0) {
    std::string jailUid = std::to_string(vm::jailUidFor(::getpid()));
    std::string all = jailUid + "\t" + jailUid + "\t" + jailUid + "\t" + jailUid;
    EXPECT_EQ(procStatus(qemu, "Uid"), all);
    EXPECT_EQ(procStatus(qemu, "Gid"), all);
  }
  // Its root holds the VM's files, not the host's.
  const std::string root = "/proc/" + std::to_string(qemu) + "/root";
  for (const char* hostOnly : {"/etc/shadow", "/etc/passwd", "/root", "/home", "/tmp", "/proc/1", "/sys/kernel"})
    EXPECT_NE(::access((root + hostOnly).c_str(), F_OK), 0) << hostOnly << " is visible to QEMU";
  EXPECT_EQ(::access((root + "/vm/control.sock").c_str(), F_OK), 0) << "the jail lacks QEMU's own sockets";
  std::stringstream groups(procStatus(qemu, "Groups"));
  for (std::string g; groups >> g;) EXPECT_NE(g, "0") << "QEMU is in group 0";
  // It is pid 1 of its own PID namespace: no other process (airlock, the
  // user's) has a pid it could signal or trace.
  EXPECT_EQ(procStatus(qemu, "NSpid"), std::to_string(qemu) + "\t1");
  std::error_code ec;
  EXPECT_NE(std::filesystem::read_symlink("/proc/" + std::to_string(qemu) + "/ns/pid", ec),
            std::filesystem::read_symlink("/proc/self/ns/pid", ec));
  // And the guest still works.
  auto output = std::make_shared<Output>();
  auto cmd = start(shell("echo alive"), output);
  ASSERT_TRUE(cmd);
  ASSERT_TRUE(cmd->wait());
  EXPECT_EQ(output->outText(), "alive\n");
}

/// Sends QMP `commands` (JSON lines) to the socket at `path` after the
/// capabilities handshake; returns each command's reply line.
std::vector<std::string> qmpSession(const std::string& path, const std::vector<std::string>& commands) {
  std::vector<std::string> replies;
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return replies;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return replies;
  std::string buffer;
  auto nextReply = [&]() -> std::string {  // the next line holding "return" or "error" (events skipped)
    for (;;) {
      for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n')) {
        std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (line.find("\"return\"") != std::string::npos || line.find("\"error\"") != std::string::npos) return line;
      }
      char chunk[4096];
      ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
      if (n <= 0) return "";
      buffer.append(chunk, static_cast<size_t>(n));
    }
  };
  std::vector<std::string> all = {R"({"execute":"qmp_capabilities"})"};
  all.insert(all.end(), commands.begin(), commands.end());
  for (size_t i = 0; i < all.size(); ++i) {
    std::string line = all[i] + "\n";
    if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) break;
    std::string reply = nextReply();
    if (i > 0) replies.push_back(reply);
  }
  return replies;
}

// A guest that controls QEMU (here: its QMP monitor) still cannot open a
// host file outside the jail, while the VM's own files open.
TEST_F(MachineTest, QemuCannotOpenHostFilesOutsideItsJail) {
  pid_t qemu = machine_->vm().qemuPid();
  ASSERT_GT(qemu, 0);
  const std::string qmp = "/proc/" + std::to_string(qemu) + "/root/vm/qmp.sock";
  auto open = [](const std::string& node, const std::string& file) {
    return R"({"execute":"blockdev-add","arguments":{"driver":"file","node-name":")" + node + R"(","filename":")" +
           file + R"(","read-only":true}})";
  };
  auto replies = qmpSession(qmp, {open("inside", "/in/kernel"), open("shadow", "/etc/shadow"),
                                  open("home", "/root/.bashrc"), open("byproc", "/proc/1/root/etc/shadow")});
  ASSERT_EQ(replies.size(), 4u) << "no QMP session";
  EXPECT_NE(replies[0].find("\"return\""), std::string::npos) << "a file in the jail did not open: " << replies[0];
  for (size_t i = 1; i < replies.size(); ++i)
    EXPECT_NE(replies[i].find("\"error\""), std::string::npos) << "QEMU opened a host file: " << replies[i];
}

TEST_F(MachineTest, FourConcurrentCommandsInOneVm) {
  std::shared_ptr<Output> outputs[4];
  std::shared_ptr<vm::RemoteCommand> cmds[4];
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i)
    cmds[i] = start(shell("sleep 2; echo cmd-" + std::to_string(i) + "; exit " + std::to_string(20 + i)),
                    outputs[i] = std::make_shared<Output>());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(cmds[i]);
    auto status = cmds[i]->wait();
    ASSERT_TRUE(status) << status.error().message;
    EXPECT_EQ(status->shellCode(), 20 + i);
    EXPECT_EQ(outputs[i]->outText(), "cmd-" + std::to_string(i) + "\n");
  }
  // Run one after another they would take >= 8 s; at once, about 2 s.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(7)) << "commands did not run concurrently";
}

TEST_F(MachineTest, PtyShowsTheHostWindowSizeAndFollowsResize) {
  auto output = std::make_shared<Output>();
  auto request = shell("tty; stty size; read line; stty size");
  request.pty = true;
  request.rows = 33;
  request.cols = 101;
  auto cmd = start(request, output);
  ASSERT_TRUE(cmd);
  for (int i = 0; i < 200; ++i) {
    if (output->outText().find("33 101") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(cmd->resize(40, 120));
  ASSERT_TRUE(cmd->writeStdin("go\r"));
  auto status = cmd->wait();
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(status->shellCode(), 0);
  EXPECT_NE(output->outText().find("/dev/pts/"), std::string::npos) << output->outText();
  EXPECT_NE(output->outText().find("33 101"), std::string::npos) << output->outText();
  EXPECT_NE(output->outText().find("40 120"), std::string::npos) << output->outText();
}

TEST_F(MachineTest, SignalReachesTheCommand) {
  auto output = std::make_shared<Output>();
  auto cmd = start(shell("trap 'echo got-int; exit 5' INT; echo ready; while true; do sleep 0.1; done"), output);
  ASSERT_TRUE(cmd);
  for (int i = 0; i < 200; ++i) {
    if (output->outText().find("ready") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(cmd->signal(SIGINT));
  auto status = cmd->wait();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->shellCode(), 5);
  EXPECT_NE(output->outText().find("got-int"), std::string::npos);
}

TEST_F(MachineTest, CommandRunsAsTheRequestedUserInItsCwd) {
  auto output = std::make_shared<Output>();
  auto request = shell("id -u; id -g; pwd");
  request.uid = 1000;
  request.gid = 1000;
  request.cwd = "/tmp";
  auto cmd = start(request, output);
  ASSERT_TRUE(cmd);
  auto status = cmd->wait();
  ASSERT_TRUE(status);
  EXPECT_EQ(output->outText(), "1000\n1000\n/tmp\n");
}

TEST_F(MachineTest, RootOverlayIsWritableAndDiscarded) {
  auto output = std::make_shared<Output>();
  auto cmd = start(shell("echo scratch > /etc/airlock-test && cat /etc/airlock-test"), output);
  ASSERT_TRUE(cmd);
  auto status = cmd->wait();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->shellCode(), 0) << output->allText();
  EXPECT_EQ(output->outText(), "scratch\n");
}

/// Runs `sh -c SCRIPT` in the guest as `uid` (and gid); returns its output.
std::string shellAs(vm::Machine& machine, uint32_t uid, const std::string& script) {
  auto request = shellRequest(script);
  request.uid = request.gid = uid;
  auto output = std::make_shared<GuestOutput>();
  auto cmd = startInGuest(machine, request, output);
  if (!cmd) return "cannot start: " + cmd.error().message;
  (void)(*cmd)->wait();
  return output->allText();
}

TEST(DirectWorkspace, ReadWriteShareWritesTheHostDirectory) {
  SKIP_WITHOUT_VMS();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the workspace belongs to another user";
  std::string state = freshStateDir();
  auto workspace = TempDir::create("/tmp", "airlock-direct-");
  ASSERT_TRUE(workspace);
  std::ofstream(workspace->path() + "/from-host.txt") << "host\n";
  ASSERT_EQ(::chown(workspace->path().c_str(), 1001, 1001), 0);
  ASSERT_EQ(::chown((workspace->path() + "/from-host.txt").c_str(), 1001, 1001), 0);
  vm::LaunchOptions options;
  options.rootImage = testRootImage();
  options.workspaceDir = workspace->path();
  options.workspaceReadWrite = true;
  auto machine = vm::Machine::launch(testHost(state), options);
  ASSERT_TRUE(machine) << machine.error().message;
  std::string out = shellAs(**machine, 1001, "cat /workspace/from-host.txt && echo guest > /workspace/from-guest.txt && "
                                             "rm /workspace/from-host.txt && echo DONE");
  (*machine)->stop();
  EXPECT_EQ(out, "host\nDONE\n");
  std::stringstream written;
  written << std::ifstream(workspace->path() + "/from-guest.txt").rdbuf();
  EXPECT_EQ(written.str(), "guest\n");
  EXPECT_FALSE(std::ifstream(workspace->path() + "/from-host.txt"));
  EXPECT_EQ(leftoverRunDirs(state), "");
}

// Root's own directory in direct mode would be served as root: refused.
TEST(DirectWorkspace, ARootOwnedWorkspaceIsRefusedInDirectMode) {
  SKIP_WITHOUT_VMS();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the workspace must belong to root";
  std::string state = freshStateDir();
  auto workspace = TempDir::create("/tmp", "airlock-direct-");
  ASSERT_TRUE(workspace);
  vm::LaunchOptions options;
  options.rootImage = testRootImage();
  options.workspaceDir = workspace->path();
  options.workspaceReadWrite = true;
  auto machine = vm::Machine::launch(testHost(state), options);
  ASSERT_FALSE(machine) << "direct mode served a root-owned workspace";
  EXPECT_EQ(machine.error().code, 64);
  EXPECT_NE(machine.error().message.find("belongs to root"), std::string::npos) << machine.error().message;
  EXPECT_EQ(leftoverRunDirs(state), "");
}

// Direct mode hands the guest the live workspace. A hostile guest (root in
// its VM) tries to plant a setuid-root shell, a device node for the host's
// disk and root-owned files in the user's project, and as the owner's uid a
// setuid or setgid copy of a shell: virtiofsd serves the share as its owner
// only and refuses setuid and setgid bits, so every attempt fails, and what
// the agent (the owner's uid) writes lands as the owner (issue 14, item 2).
TEST(DirectWorkspace, AHostileGuestCannotPlantRootFilesSetuidRootOrDevicesInTheWorkspace) {
  SKIP_WITHOUT_VMS();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the workspace belongs to another user";
  constexpr uint32_t kOwner = 1001;
  std::string state = freshStateDir();
  auto workspace = TempDir::create("/tmp", "airlock-direct-");
  ASSERT_TRUE(workspace);
  const std::string ws = workspace->path();
  std::ofstream(ws + "/existing.txt") << "host\n";
  ASSERT_EQ(::chown(ws.c_str(), kOwner, kOwner), 0);
  ASSERT_EQ(::chown((ws + "/existing.txt").c_str(), kOwner, kOwner), 0);
  vm::LaunchOptions options;
  options.rootImage = testRootImage();
  options.workspaceDir = ws;
  options.workspaceReadWrite = true;
  auto machine = vm::Machine::launch(testHost(state), options);
  ASSERT_TRUE(machine) << machine.error().message;
  std::string attack = runShell(**machine,
                                "cp /bin/busybox /workspace/rootshell; chmod 4755 /workspace/rootshell; "
                                "mknod /workspace/disk b 8 0; mknod /workspace/mem c 1 1; "
                                "echo x > /workspace/root-owned; mkdir /workspace/root-dir; "
                                "chown 0:0 /workspace/existing.txt; chmod 4755 /workspace/existing.txt; "
                                "ln -s /etc/shadow /workspace/link-by-root; echo tried")
                           .output;
  std::string agent = shellAs(**machine, kOwner,
                              "echo mine > /workspace/mine.txt && mkdir /workspace/dir && "
                              "echo more >> /workspace/existing.txt && echo agent-ok; "
                              "cp /bin/busybox /workspace/owner-shell; chmod 4755 /workspace/owner-shell; "
                              "chmod 2755 /workspace/mine.txt; chmod 2777 /workspace/dir; mkdir -m 2777 /workspace/sgid; "
                              "chmod u+s /workspace/existing.txt");
  (*machine)->stop();
  EXPECT_NE(attack.find("tried"), std::string::npos) << attack;
  EXPECT_NE(agent.find("agent-ok"), std::string::npos) << "the owner could not write: " << agent;
  // Nothing in the workspace but the owner's files, no device, no setuid-root.
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(ws, ec)) {
    struct stat st {};
    ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kOwner) << entry.path() << " belongs to uid " << st.st_uid;
    EXPECT_EQ(st.st_gid, kOwner) << entry.path();
    EXPECT_FALSE(S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode)) << entry.path() << " is a device node";
    // Not even setuid or setgid to the owner: another user running it would become the owner.
    EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << entry.path() << " has a setuid or setgid bit";
  }
  EXPECT_EQ(slurp(ws + "/mine.txt"), "mine\n");
  EXPECT_EQ(slurp(ws + "/existing.txt"), "host\nmore\n");
  EXPECT_EQ(leftoverRunDirs(state), "");
}

}  // namespace
}  // namespace airlock::test
