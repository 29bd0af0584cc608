// The VM library used directly: several commands in one VM, pty sizes, the
// read-write workspace share of direct mode.

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "guest_machine.h"
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
    if (line.starts_with(field + ":")) return line.substr(line.find_first_not_of(" \t", field.size() + 1));
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
  // And the guest still works.
  auto output = std::make_shared<Output>();
  auto cmd = start(shell("echo alive"), output);
  ASSERT_TRUE(cmd);
  ASSERT_TRUE(cmd->wait());
  EXPECT_EQ(output->outText(), "alive\n");
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

TEST(DirectWorkspace, ReadWriteShareWritesTheHostDirectory) {
  SKIP_WITHOUT_VMS();
  std::string state = freshStateDir();
  auto workspace = TempDir::create("/tmp", "airlock-direct-");
  ASSERT_TRUE(workspace);
  std::ofstream(workspace->path() + "/from-host.txt") << "host\n";
  vm::LaunchOptions options;
  options.rootImage = testRootImage();
  options.workspaceDir = workspace->path();
  options.workspaceReadWrite = true;
  auto machine = vm::Machine::launch(testHost(state), options);
  ASSERT_TRUE(machine) << machine.error().message;
  auto r = runShell(**machine, "cat /workspace/from-host.txt && echo guest > /workspace/from-guest.txt && "
                               "rm /workspace/from-host.txt && echo DONE");
  (*machine)->stop();
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, "host\nDONE\n");
  std::stringstream written;
  written << std::ifstream(workspace->path() + "/from-guest.txt").rdbuf();
  EXPECT_EQ(written.str(), "guest\n");
  EXPECT_FALSE(std::ifstream(workspace->path() + "/from-host.txt"));
  EXPECT_EQ(leftoverRunDirs(state), "");
}

}  // namespace
}  // namespace airlock::test
