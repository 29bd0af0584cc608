#pragma once
// The real sandbox (vm/sandbox.h): a QEMU microVM launched for a session with
// its boot assets, root image, scratch disk, accelerator choice, janitor and
// egress network, with every temporary file in one run directory removed
// when the machine stops.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/host_context.h"
#include "common/paths.h"
#include "egress/port_publisher.h"
#include "egress/session_network.h"
#include "vm/janitor.h"
#include "vm/launch_options.h"
#include "vm/qemu_vm.h"
#include "vm/sandbox.h"

namespace airlock::vm {

/// A booted VM plus everything it needs on the host.
class Machine final : public Sandbox {
 public:
  /// Prepares assets and boots. From `host`: the cache (boot assets, the KVM
  /// probe's answer), the state directory (the run directory under
  /// state/vms), airlock-init (findInitBinary) and $AIRLOCK_EXE. Errors carry
  /// airlock exit codes (kHostNotReady, kImage, kVmFailed) and say what to do.
  static Result<std::unique_ptr<Machine>> launch(const HostContext& host, const LaunchOptions& options);
  ~Machine() override;
  QemuVm& vm() { return *vm_; }
  /// The session network behind the egress firewall (null without LaunchOptions::egress).
  egress::SessionNetwork* network() { return network_.get(); }
  /// Stops the VM, removes the run directory, releases the janitor.
  void stop() override;

  // Sandbox
  Result<std::shared_ptr<Command>> exec(const protocol::ExecRequest& request, OutputHandlers handlers) override;
  Result<uint64_t> exportWorkspace(const std::string& destPath, const ExportLimits& limits) override;
  std::string crashReason() const override;
  std::vector<std::string> blockedEgress() const override;
  bool hasEgress() const override { return network_ != nullptr; }

 private:
  Machine(TempDir runDir, Janitor janitor) : runDir_(std::move(runDir)), janitor_(std::move(janitor)) {}
  TempDir runDir_;
  Fd ownerLock_;  ///< the run directory's lock (vm/run_dirs.h), held for the machine's life
  Janitor janitor_;
  std::unique_ptr<egress::SessionNetwork> network_;
  std::vector<std::unique_ptr<egress::PortPublisher>> publishers_;
  std::unique_ptr<QemuVm> vm_;
};

/// Path of the airlock-init binary: $AIRLOCK_INIT (of host.env), else next
/// to the airlock executable (host.selfDir), else <prefix>/lib/airlock/airlock-init.
Result<std::string> findInitBinary(const HostContext& host);

}  // namespace airlock::vm
