// Issue 12, "a bounded host side": host memory, disk and time stay bounded
// whatever the guest sends. The export attacks use a hostile airlock-init
// built by the tests (hostile_export.cc); the console flood and the stdin
// flood need only the guest's root.

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "airlock_process.h"
#include "common/exit_codes.h"
#include "common/subprocess.h"
#include "guest_machine.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// A Machine booted with the hostile airlock-init.
class HostileInit : public MachineFixture {
 protected:
  void SetUp() override {
    init_ = HOSTILE_INIT_BINARY;
    MachineFixture::SetUp();
  }
  /// Stops the VM and checks it is gone within `seconds`.
  void expectStoppedWithin(double seconds) {
    auto t = Clock::now();
    machine_->stop();
    double took = secondsSince(t);
    EXPECT_LT(took, seconds) << "stopping the VM took " << took << " s";
    EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty()) << "QEMU was left running";
    std::printf("[ measured ] VM stopped in %.1f s\n", took);
  }
};

// Attack: the guest never answers the export (before: airlock waited forever).
TEST_F(HostileInit, ExportThatIsNeverAnsweredTimesOutAndTheVmStops) {
  ASSERT_EQ(sh("echo silent > /hostile-export").code, 0);
  vm::ExportLimits limits;
  limits.idle = std::chrono::seconds(3);
  auto t = Clock::now();
  auto r = machine_->vm().control().exportWorkspace(state_ + "/changes.tar", limits);
  double took = secondsSince(t);
  ASSERT_FALSE(r) << "a silent guest's export succeeded";
  EXPECT_EQ(r.error().code, exit_code::kVmFailed);
  EXPECT_NE(r.error().message.find("inactivity limit"), std::string::npos) << r.error().message;
  EXPECT_LT(took, 10.0);
  std::printf("[ measured ] silent export given up after %.1f s: %s\n", took, r.error().message.c_str());
  expectStoppedWithin(10.0);
}

// Attack: the guest streams its change set without end (before: the host
// read and discarded everything past the cap, for as long as the guest sent).
TEST_F(HostileInit, EndlessExportStreamStopsAtTheCapAndTheVmStops) {
  ASSERT_EQ(sh("echo endless > /hostile-export").code, 0);
  vm::ExportLimits limits;
  limits.maxBytes = 8u << 20;
  std::string dest = state_ + "/changes.tar";
  auto t = Clock::now();
  auto r = machine_->vm().control().exportWorkspace(dest, limits);
  double took = secondsSince(t);
  ASSERT_FALSE(r) << "an endless export succeeded";
  EXPECT_EQ(r.error().code, exit_code::kUnsafeChangeSet);
  EXPECT_NE(r.error().message.find("exceeds the limit of 8 MiB"), std::string::npos) << r.error().message;
  struct stat st {};
  ASSERT_EQ(stat(dest.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_size), limits.maxBytes);
  EXPECT_NE(machine_->vm().control().closedReason(), "") << "the host kept reading the guest";
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("[ measured ] endless export cut at %lld bytes on disk (%lld blocks) after %.1f s; test process "
              "peak RSS %ld KiB\n",
              static_cast<long long>(st.st_size), static_cast<long long>(st.st_blocks), took, ru.ru_maxrss);
  expectStoppedWithin(10.0);
}

class ConsoleFlood : public MachineFixture {
 protected:
  void configure(vm::LaunchOptions& options) override {
    options.console.headBytes = 16u << 10;
    options.console.tailBytes = 32u << 10;
  }
};

// Attack: the guest's root writes the console without end and without
// newlines (before: a 21 MB log in 45 s, read whole: 1 GiB of memory for a
// 512 MiB log). The host's log stays under its cap; tails stay small.
TEST_F(ConsoleFlood, ConsoleFloodKeepsTheHostLogUnderItsCap) {
  auto t = Clock::now();
  auto r = sh("dd if=/dev/zero bs=64k count=32 2>/dev/null > /dev/ttyS0 || "
              "dd if=/dev/zero bs=64k count=32 2>/dev/null > /dev/console");
  ASSERT_EQ(r.code, 0) << r.output;
  double took = secondsSince(t);
  for (int i = 0; i < 100 && machine_->vm().consoleBytes() < (2u << 20); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(machine_->vm().consoleBytes(), 2u << 20) << "the flood did not reach the host";
  std::string log = state_ + "/airlock/vms";
  auto found = runCommand({"find", log, "-name", "console.log"});
  ASSERT_TRUE(found && !found->stdoutText.empty());
  std::string path = found->stdoutText.substr(0, found->stdoutText.find('\n'));
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_size), (16u << 10) + 2 * (32u << 10) + 100) << "console log over its cap";
  std::string tail = machine_->vm().consoleTail(20);
  EXPECT_LE(tail.size(), 21u * 1030);
  std::printf("[ measured ] console: guest wrote %llu bytes in %.1f s, host log %lld bytes, tail %zu bytes\n",
              static_cast<unsigned long long>(machine_->vm().consoleBytes()), took,
              static_cast<long long>(st.st_size), tail.size());
}

// Attack: the guest writes terminal escapes to its console (a title change, a
// screen clear) on a line that looks like an init failure; airlock quotes
// console lines after "airlock:" in errors. They come out escaped.
TEST_F(ConsoleFlood, GuestConsoleEscapesAreShownEscapedInTails) {
  auto r = sh("printf 'airlock-init: fatal: \\033]0;pwned\\007\\033[2Jgone\\n' > /dev/ttyS0");
  ASSERT_EQ(r.code, 0) << r.output;
  std::string reason;
  for (int i = 0; i < 100 && reason.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    reason = machine_->vm().crashReason();
  }
  EXPECT_NE(reason.find("\\x1b]0;pwned\\x07\\x1b[2Jgone"), std::string::npos) << reason;
  std::string tail = machine_->vm().consoleTail(20);
  EXPECT_NE(tail.find("\\x1b[2Jgone"), std::string::npos) << tail;
  for (const std::string& text : {reason, tail})
    for (char c : text) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c != 0x7f)) << "raw control byte " << int(c);
}

class SessionEnd : public testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_VMS();
    state_ = freshStateDir();
  }
  void TearDown() override {
    if (state_.empty()) return;
    EXPECT_EQ(leftoverRunDirs(state_), "") << "a VM run directory was left behind";
    EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty()) << "QEMU was left running";
  }
  /// Waits (up to 300 s) until `path` contains `text`.
  static bool waitForText(const std::string& path, const std::string& text) {
    for (int i = 0; i < 3000; ++i) {
      if (slurp(path).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  /// Waits for `pid` at most `seconds`; -1 (and SIGKILL) when it did not end.
  static int waitAtMost(pid_t pid, double seconds, rusage* ru) {
    auto t = Clock::now();
    int status = 0;
    while (secondsSince(t) < seconds) {
      if (wait4(pid, &status, WNOHANG, ru) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, SIGKILL);
    wait4(pid, &status, 0, ru);
    return -1;
  }
  std::string state_;
};

// Attack: 50 MiB piped into a command that never reads its stdin (before:
// airlock blocked sending it and then ignored SIGTERM for good).
TEST_F(SessionEnd, StdinFloodIntoACommandThatNeverReadsStillEndsOnSigterm) {
  std::string input = state_ + "/input";
  {
    std::ofstream f(input, std::ios::binary);
    std::string mib(1 << 20, 'x');
    for (int i = 0; i < 50; ++i) f << mib;
  }
  int in = open(input.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  std::string out = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--tty", "never", "--rootfs", testRootfs(), "--", "sh", "-c",
                            "echo READY; exec sleep 600"},
                           out, {{"XDG_STATE_HOME", state_}}, in);
  close(in);
  ASSERT_TRUE(waitForText(out, "READY")) << slurp(out);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::string status = slurp("/proc/" + std::to_string(pid) + "/status");
  auto hwm = status.find("VmHWM:");
  std::string peak = hwm == std::string::npos ? "?" : status.substr(hwm + 6, status.find('\n', hwm) - hwm - 6);
  auto t = Clock::now();
  kill(pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(pid, SIGTERM);  // asked twice: at once
  rusage ru{};
  int code = waitAtMost(pid, 30, &ru);
  double took = secondsSince(t);
  EXPECT_EQ(code, 128 + SIGTERM) << "airlock did not end on SIGTERM: " << slurp(out);
  std::printf("[ measured ] stdin flood: airlock ended %.1f s after SIGTERM; airlock's peak RSS %s, with QEMU "
              "%ld KiB\n",
              took, peak.c_str(), ru.ru_maxrss);
}

// Attack, end to end: a guest that never answers the export. airlock gives up
// after the inactivity limit (30 s) with one line naming it, exit 66, and no
// QEMU is left.
TEST_F(SessionEnd, SilentGuestExportEndsTheRunWithExit66) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  std::string out = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--tty", "never", "--rootfs", testRootfs(), "-w", ws, "--review=none",
                            "--", "sh", "-c", "echo silent > /hostile-export; echo READY"},
                           out, {{"XDG_STATE_HOME", state_}, {"AIRLOCK_INIT", HOSTILE_INIT_BINARY}});
  ASSERT_TRUE(waitForText(out, "READY")) << slurp(out);
  auto t = Clock::now();
  rusage ru{};
  int code = waitAtMost(pid, 90, &ru);
  double took = secondsSince(t);
  EXPECT_EQ(code, exit_code::kVmFailed) << slurp(out);
  EXPECT_NE(slurp(out).find("inactivity limit"), std::string::npos) << slurp(out);
  EXPECT_LT(took, 60.0);
  std::printf("[ measured ] silent export: airlock exited %d %.1f s after the command ended\n", code, took);
}

// Attack (issue 12, item 8) in a VM: an 8 MiB file and 50 hard links to it
// (before: a 409 MiB pending/changes.tar). The guest exports links as links,
// the host keeps them as links: the pending tar holds the content once.
TEST_F(SessionEnd, HardLinksMadeInTheGuestArePendingAsLinks) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  auto r = runAirlock({"run-image", "-q", "--tty", "never", "--rootfs", testRootfs(), "-w", ws, "--review=none", "--",
                       "sh", "-c",
                       "dd if=/dev/urandom of=/workspace/big bs=1M count=8 2>/dev/null; i=0; "
                       "while [ $i -lt 50 ]; do ln /workspace/big /workspace/l$i; i=$((i+1)); done"},
                      "", {{"XDG_STATE_HOME", state_}});
  EXPECT_EQ(r.exitCode, exit_code::kReviewPending) << r.err;
  auto found = runCommand({"find", state_ + "/airlock/sessions", "-path", "*pending/changes.tar"});
  ASSERT_TRUE(found && !found->stdoutText.empty()) << r.err;
  std::string tar = found->stdoutText.substr(0, found->stdoutText.find('\n'));
  struct stat st {};
  ASSERT_EQ(stat(tar.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 10 << 20) << "the links were kept as copies";
  std::string exported = tar.substr(0, tar.rfind("/pending/")) + "/changes.tar";
  struct stat ex {};
  stat(exported.c_str(), &ex);
  std::printf("[ measured ] 8 MiB + 50 links in the guest: export %lld bytes, pending tar %lld bytes (%lld on disk)\n",
              static_cast<long long>(ex.st_size), static_cast<long long>(st.st_size),
              static_cast<long long>(st.st_blocks) * 512);
}

// The escape: Ctrl-] Ctrl-] at the terminal ends the session at once, the
// changes so far are kept for review, and the VM is stopped.
TEST_F(SessionEnd, EscapeCtrlBracketTwiceEndsTheSessionAndKeepsTheChanges) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  std::string out = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--tty", "always", "--rootfs", testRootfs(), "-w", ws,
                            "--review=none", "--", "sh", "-c",
                            "echo kept > /workspace/made.txt; sync; echo READY; trap '' INT TERM; sleep 600"},
                           out, {{"XDG_STATE_HOME", state_}}, fds[0]);
  close(fds[0]);
  ASSERT_TRUE(waitForText(out, "READY")) << slurp(out);
  auto t = Clock::now();
  ASSERT_EQ(write(fds[1], "\x1d\x1d", 2), 2);
  rusage ru{};
  int code = waitAtMost(pid, 60, &ru);
  double took = secondsSince(t);
  close(fds[1]);
  EXPECT_EQ(code, 128 + SIGTERM) << slurp(out);
  EXPECT_NE(slurp(out).find("Ctrl-] Ctrl-]"), std::string::npos) << slurp(out);
  auto found = runCommand({"find", state_ + "/airlock/sessions", "-path", "*pending/changes.patch"});
  ASSERT_TRUE(found && !found->stdoutText.empty()) << "no pending changes kept: " << slurp(out);
  std::string patch = slurp(found->stdoutText.substr(0, found->stdoutText.find('\n')));
  EXPECT_NE(patch.find("+kept"), std::string::npos) << patch;
  std::printf("[ measured ] escape: session ended %.1f s after Ctrl-] Ctrl-]\n", took);
}

}  // namespace
}  // namespace airlock::test
