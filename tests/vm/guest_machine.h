#pragma once
// Shared by the VM tests (tests/vm, tests/egress): running shell commands in
// a booted Machine and a fixture that boots one Machine per test from the
// test rootfs, stops it and checks that nothing was left behind.

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>

#include "vm/machine.h"

namespace airlock::test {

/// `sh -c SCRIPT` with a PATH covering the busybox applets.
protocol::ExecRequest shellRequest(const std::string& script);

/// A command's output as it arrives (written on the channel's reader thread).
struct GuestOutput {
  std::mutex mutex;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
  std::string all;  ///< both, interleaved as received
  std::string outText() {
    std::lock_guard lock(mutex);
    return out;
  }
  std::string allText() {
    std::lock_guard lock(mutex);
    return all;
  }
};

/// Starts `request` in the guest, collecting its output into `output`.
Result<std::shared_ptr<vm::RemoteCommand>> startInGuest(vm::Machine& machine, const protocol::ExecRequest& request,
                                                        std::shared_ptr<GuestOutput> output);

struct GuestResult {
  int code = -1;       ///< the shell's exit code; -1 if the command could not run
  std::string output;  ///< stdout and stderr interleaved (or the error)
};

/// Runs `sh -c SCRIPT` in the guest to completion.
GuestResult runShell(vm::Machine& machine, const std::string& script);

/// Boots a Machine per test (SetUp) from the test rootfs with the options
/// configure() adds; TearDown stops it and expects no leftover run directory.
/// Skips (with the reason) where VMs cannot run.
class MachineFixture : public testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  /// Adjusts the launch options (cpus, egress policy, ...) before the boot.
  virtual void configure(vm::LaunchOptions& options) { (void)options; }
  /// The options SetUp boots with: the test rootfs plus configure().
  vm::LaunchOptions launchOptions();
  GuestResult sh(const std::string& script) { return runShell(*machine_, script); }
  std::string init_;  ///< the airlock-init to boot (set before SetUp); empty: this build's
  std::string state_;
  HostContext host_;  ///< what SetUp launched with (testHost)
  std::unique_ptr<vm::Machine> machine_;
};

}  // namespace airlock::test
