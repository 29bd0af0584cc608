#pragma once
// What a session asks of its machine (vm::Machine::launch): image, size,
// workspace share, egress policy, published ports, accelerator, scratch disk,
// console limits and where progress lines go. Plain data, decided before
// anything is created (session/plan.h holds one).

#include <optional>
#include <string>
#include <vector>

#include "common/file_lock.h"
#include "egress/policy.h"
#include "egress/session_network.h"
#include "vm/accel.h"
#include "vm/console_log.h"
#include "vm/vm_config.h"

namespace airlock::vm {

/// The machine of one session.
struct LaunchOptions {
  /// The erofs root image (image::ensureRootfsImage turns a rootfs directory into one).
  std::string rootImage;
  unsigned cpus = 1;                 ///< vCPUs (1-64)
  unsigned memoryMiB = 512;          ///< guest RAM in MiB (128-65536)
  std::string workspaceDir;          ///< shared at /workspace when set (read-only unless workspaceReadWrite), or:
  /// the snapshot, as an erofs image on a read-only disk (vm/workspace_image.h),
  /// is the lower layer of an overlay at /workspace (writes go to the
  /// scratch disk; export them with Sandbox::exportWorkspace)
  std::string workspaceSnapshot;
  /// Share workspaceDir read-write (direct mode: the guest edits the live
  /// files). Ignored for workspaceSnapshot, which is always read-only.
  bool workspaceReadWrite = false;
  /// The egress firewall: the guest's network is a tap in a private
  /// namespace enforcing this policy; without one, no network.
  std::optional<egress::Policy> egress;
  egress::NetworkOptions egressNetwork;  ///< resolver, TTL bounds, log file of the egress firewall
  /// Guest ports reachable at the host's 127.0.0.1:hostPort (--publish; needs egress).
  std::vector<egress::HostPort> publish;
  /// Host services behind virtio-serial ports (--git-ssh-agent's filter);
  /// they log to the egress log.
  std::vector<ServedPort> servedPorts;
  AccelRequest accel = AccelRequest::kAuto;
  unsigned scratchMiB = 2048;        ///< sparse ext4 scratch disk (the root overlay's upper layer)
  /// Where the scratch disk is kept if airlock dies while the VM runs
  /// (SIGKILL; the janitor moves it there): a detached session's changes
  /// stay exportable. "" = it goes with the VM's run directory.
  std::string keepScratchAt;
  /// A lock file the janitor holds while it cleans up after airlock died
  /// (the session's run lock): whoever waits for it sees the disk kept.
  std::string cleanupLock;
  /// Boot with this existing scratch disk instead of a new one (a dead
  /// session's, to export its changes): neither formatted nor removed.
  std::string scratchDisk;
  ConsoleLimits console;             ///< how much of the guest console the host keeps
  ProgressFn progress;               ///< phase lines ("building root image ...")
  ProgressFn warn;                   ///< one-line warnings (e.g. a --publish port)
  ProgressFn notice;                 ///< lines worth a look that only cost speed (the TCG fallback); -q drops them
};

}  // namespace airlock::vm
