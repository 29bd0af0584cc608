#pragma once
// One running microVM: virtiofsd per share, QEMU with a QMP socket, and the
// control channel to airlock-init. Every process is tied to airlock
// (PR_SET_PDEATHSIG) and registered with the janitor, so nothing outlives
// airlock, even when airlock is killed with SIGKILL.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "vm/cgroup.h"
#include "vm/console_log.h"
#include "vm/control_channel.h"
#include "vm/janitor.h"
#include "vm/vm_config.h"

namespace airlock::vm {

class QemuVm {
 public:
  /// Starts the VM described by `config` (sockets and logs go in `runDir`,
  /// which the caller owns) and waits until airlock-init says hello, at most
  /// `bootTimeout`. Errors (exit code 66) quote the guest console when it
  /// explains the failure (kernel panic, airlock-init fatal error); the
  /// console of a failed boot is kept as `stateDir`/last-boot-failure.log
  /// (`stateDir`: HostDirs::state), since `runDir` goes away with the VM.
  static Result<std::unique_ptr<QemuVm>> start(VmConfig config, const std::string& runDir, const std::string& stateDir,
                                               Janitor& janitor, std::chrono::milliseconds bootTimeout);
  ~QemuVm();
  QemuVm(const QemuVm&) = delete;
  QemuVm& operator=(const QemuVm&) = delete;

  ControlChannel& control() { return *control_; }
  /// Stops the VM: shutdown frame (guest powers off), then QMP quit, then
  /// SIGTERM, then SIGKILL, each after a grace period. Reaps every child.
  void stop();
  /// Whether the QEMU process is still running.
  bool running();
  /// The QEMU process (for tests that inspect its confinement in /proc).
  pid_t qemuPid() const { return qemu_; }
  /// The last lines of the guest console, for error messages (read from
  /// the end of the capped log, lines cut at 1 KiB), each escaped with
  /// visibleText().
  std::string consoleTail(size_t lines = 20) const;
  /// Bytes the guest wrote to its console so far.
  uint64_t consoleBytes() const { return console_ ? console_->received() : 0; }
  /// A one-line explanation of why the guest died, from the console, escaped
  /// with visibleText() (may be empty).
  std::string crashReason() const;

 private:
  QemuVm() = default;
  bool waitExit(std::chrono::milliseconds timeout);
  void reapHelpers();
  /// Ends the served ports' threads (their streams end) and joins them.
  void stopServices();

  VmConfig config_;
  pid_t qemu_ = -1;
  std::optional<int> qemuStatus_;
  std::vector<pid_t> helpers_;
  std::optional<VmCgroup> cgroup_;  ///< QEMU's, removed once QEMU is reaped
  std::unique_ptr<ConsoleDrain> console_;
  std::unique_ptr<ControlChannel> control_;
  /// The host ends of the served ports (VmConfig::servedPorts), and their threads.
  std::vector<Fd> servicePorts_;
  std::vector<std::thread> services_;
};

}  // namespace airlock::vm
