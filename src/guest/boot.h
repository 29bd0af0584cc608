#pragma once
// airlock-init boot steps: early mounts, kernel modules, the root overlay and
// the switch into it. Runs as PID 1 from the initramfs; libc only.

#include <string>
#include <vector>

namespace airlock::guest {

/// Where the scratch disk (ext4: the upper layers of / and /workspace) is mounted.
inline constexpr const char* kScratchMount = "/run/airlock/scratch";
/// Where the /workspace overlay keeps its upper layer (on the scratch disk).
inline constexpr const char* kWorkspaceUpper = "/run/airlock/scratch/workspace/upper";

/// One virtio-fs share to mount: `tag` as exported by the host, at `path` in the guest.
struct ShareMount {
  std::string tag;
  std::string path;
  bool readOnly = true;
};

/// What the host asked for on the kernel command line (airlock.* parameters):
///   airlock.root=SERIAL     virtio-blk serial of the erofs root image (default "root")
///   airlock.scratch=SERIAL  virtio-blk serial of the ext4 scratch disk (default "scratch")
///   airlock.share=TAG:PATH:ro|rw  a virtio-fs share (repeatable)
///   airlock.workspace=SERIAL  the virtio-blk disk with this serial holds an erofs image of
///                           the snapshot (read-only): the lower layer of an overlay at
///                           /workspace whose upper layer is on the scratch disk
///   airlock.net=tap         configure eth0 behind the egress firewall: 10.0.2.15/24 and
///                           fd00:a1::15/64, gateway and resolver 10.0.2.2 / fd00:a1::1
///   airlock.probe=1         boot probe: power off as soon as init runs
///   airlock.probe=modules   boot probe: power off once init has loaded its modules
///                           (bench/boot.sh: a bare boot of Debian's kernel with them)
///   airlock.ssh_agent=1     serve SSH agent requests at kSshAgentSocket over the
///                           virtio-serial port kSshAgentPort (guest/ssh_agent_relay.h)
/// How airlock-init configures eth0.
enum class NetMode { kNone, kTap };

struct BootConfig {
  std::string rootSerial = "root";
  std::string scratchSerial = "scratch";
  std::vector<ShareMount> shares;
  std::string workspaceSerial;  ///< empty: no snapshot workspace
  NetMode net = NetMode::kNone;
  bool probe = false;
  bool probeAfterModules = false;
  bool sshAgent = false;
};

/// Parses the kernel command line (contents of /proc/cmdline).
BootConfig parseCmdline(const std::string& cmdline);

/// Mounts /dev, /proc and /sys in the initramfs. Returns false with a message on failure.
bool mountEarly(std::string& error);

/// Loads the modules listed in /lib/modules/load-order (finit_module), in
/// order, skipping networking and virtio-fs modules the config does not use.
bool loadModules(const BootConfig& config, std::string& error);

/// Mounts the erofs root and the scratch disk, builds the root overlay at
/// /newroot, mounts the shares and the API filesystems in it, and switches
/// root into it (mount --move + chroot). After this, / is the overlay.
bool switchToOverlayRoot(const BootConfig& config, std::string& error);

/// Sets the hostname, brings up loopback and, with airlock.net=tap,
/// eth0 with its addresses, default routes and /etc/resolv.conf.
void setupHost(const BootConfig& config);

/// Unmounts what can be unmounted, syncs, and powers the VM off. Never returns.
[[noreturn]] void powerOff();

/// Logs one line to the kernel console (/dev/kmsg, falling back to stderr).
void logLine(const std::string& line);

}  // namespace airlock::guest
