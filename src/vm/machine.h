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
#include "egress/policy.h"
#include "egress/port_publisher.h"
#include "egress/session_network.h"
#include "vm/accel.h"
#include "vm/asset_cache.h"
#include "vm/janitor.h"
#include "vm/qemu_vm.h"
#include "vm/sandbox.h"

namespace airlock::vm {

struct LaunchOptions {
  /// The erofs root image (image::ensureRootfsImage turns a rootfs directory into one).
  std::string rootImage;
  unsigned cpus = 1;                 ///< vCPUs (1-64)
  unsigned memoryMiB = 512;          ///< guest RAM in MiB (128-65536)
  std::string workspaceDir;          ///< shared at /workspace when set (read-only unless workspaceReadWrite), or:
  /// the snapshot shared read-only as the lower layer of an overlay at
  /// /workspace (writes go to the scratch disk; export them with
  /// ControlChannel::exportWorkspace)
  std::string workspaceSnapshot;
  /// Share workspaceDir read-write (direct mode: the guest edits the live
  /// files). Ignored for workspaceSnapshot, which is always read-only.
  bool workspaceReadWrite = false;
  bool userNetwork = false;          ///< QEMU user networking (see VmConfig::userNetwork)
  /// The egress firewall: the guest's network is a tap in a private
  /// namespace enforcing this policy (takes precedence over userNetwork).
  std::optional<egress::Policy> egress;
  egress::NetworkOptions egressNetwork;  ///< resolver, TTL bounds, log file of the egress firewall
  /// Guest ports reachable at the host's 127.0.0.1:hostPort (--publish; needs egress).
  std::vector<egress::HostPort> publish;
  AccelRequest accel = AccelRequest::kAuto;
  unsigned scratchMiB = 2048;        ///< sparse ext4 scratch disk (the root overlay's upper layer)
  ConsoleLimits console;             ///< how much of the guest console the host keeps
  ProgressFn progress;               ///< phase lines ("building root image ...")
  ProgressFn warn;                   ///< one-line warnings (e.g. a --publish port)
  ProgressFn notice;                 ///< lines worth a look that only cost speed (the TCG fallback); -q drops them
};

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
  Janitor janitor_;
  std::unique_ptr<egress::SessionNetwork> network_;
  std::vector<std::unique_ptr<egress::PortPublisher>> publishers_;
  std::unique_ptr<QemuVm> vm_;
};

/// Path of the airlock-init binary: $AIRLOCK_INIT (of host.env), else next
/// to the airlock executable (host.selfDir), else <prefix>/lib/airlock/airlock-init.
Result<std::string> findInitBinary(const HostContext& host);

}  // namespace airlock::vm
