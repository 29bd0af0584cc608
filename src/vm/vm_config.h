#pragma once
// Typed description of one microVM, and the QEMU command line built from it.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vm/console_log.h"

namespace airlock::vm {

enum class Accel { kKvm, kTcg };

/// A virtio-blk disk. `serial` is how airlock-init finds it (/sys/block/vdX/serial).
struct Disk {
  std::string path;
  std::string serial;
  bool readOnly = true;
  std::string format = "raw";
};

/// A host directory exported with virtiofsd over `socketPath`, mounted in the
/// guest at `guestPath`. Read-only unless `readOnly` is false; the host enforces
/// it (virtiofsd serves a recursively read-only bind mount), the guest mount is
/// ro too. virtiofsd acts only as `ownerUid`/`ownerGid` (vm/jail.h,
/// ShareJailSpec): the guest sees the owner's files under those numbers and
/// can create files only as that uid.
struct Share {
  std::string tag;
  std::string hostPath;
  std::string guestPath;
  bool readOnly = true;
  std::string socketPath;
  uint32_t ownerUid = 0;
  uint32_t ownerGid = 0;
};

/// A virtio-serial port backed by a unix socket QEMU listens on.
struct SerialPort {
  std::string name;        ///< port name the guest sees (/sys/class/virtio-ports/*/name)
  std::string socketPath;
};

/// A host-side service behind a virtio-serial port (the SSH agent filter):
/// `serve` runs on a thread of its own with the host end of the port
/// (QEMU's socket, connected before the guest starts) and the session's
/// egress log, and returns when the stream ends (the VM stopped). The guest
/// is told on the kernel command line (for guest::kSshAgentPort:
/// airlock.ssh_agent=1).
struct ServedPort {
  std::string name;
  std::function<void(int port, const std::function<void(const std::string&)>& log)> serve;
};

struct VmConfig {
  unsigned cpus = 1;              ///< vCPUs
  unsigned memoryMiB = 512;       ///< guest RAM in MiB
  Accel accel = Accel::kTcg;
  std::string kernel;             ///< uncompressed vmlinux (PVH entry) or bzImage
  std::string initramfs;
  std::string extraCmdline;       ///< appended to the kernel command line
  /// Under TCG the guest TSC ticks at the host's rate but the kernel cannot
  /// calibrate it (the PIT calibration stalls, boot hangs): pass it in kHz
  /// as tsc_early_khz. 0 = let the kernel calibrate (KVM).
  unsigned tscKhz = 0;
  std::vector<Disk> disks;
  std::vector<Share> shares;
  /// Serial of the disk (in `disks`) holding the erofs image of the
  /// workspace snapshot: the read-only lower layer of the guest's /workspace
  /// overlay (airlock.workspace=SERIAL). Empty: no snapshot workspace.
  std::string workspaceSerial;
  std::vector<SerialPort> ports;
  std::vector<ServedPort> servedPorts;
  /// Where the served ports' services log (the session's egress log); unset: nowhere.
  std::function<void(const std::string&)> serviceLog;
  /// A tap device (open fd, inherited by QEMU) in the session's network
  /// namespace behind the egress firewall; the guest configures itself with
  /// airlock.net=tap. -1 = none: the guest has no network device.
  int tapFd = -1;
  std::string qmpSocket;          ///< QMP control socket path
  std::string consoleLog;         ///< guest serial console (kernel log) goes here
  /// When set, QEMU serves the console on this unix socket (and waits for a
  /// client before it starts the guest); QemuVm drains it into consoleLog
  /// within consoleLimits. Empty: QEMU writes consoleLog itself (short probes).
  std::string consoleSocket;
  ConsoleLimits consoleLimits;
  std::string qemuBinary = "qemu-system-x86_64";
  /// The uid (and gid) QEMU runs as when airlock runs as root (vm::jailUidFor);
  /// empty: airlock's own (an unprivileged user). Either way QEMU is jailed
  /// (vm/jail.h).
  std::optional<uint32_t> qemuUid;
  /// Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup) when airlock
  /// may divide it (root): QEMU then runs in a cgroup of its own with
  /// limitsForGuest(memoryMiB) (vm/cgroup.h). When that cannot be made
  /// (a cgroup v1 host), QEMU runs without one and qemu.log says why.
  /// Empty: no cgroup.
  std::string cgroupHierarchy;
};

/// The full argv (argv[0] = qemuBinary) for `qemu-system-x86_64 -M microvm`.
/// Facts behind the flags (measured on Debian's cloud kernel under TCG):
/// keep ACPI and the RTC on (acpi=off breaks virtio-mmio discovery, rtc=off
/// adds 2 s), pit=on (else the TSC calibration stalls under TCG),
/// virtio-mmio.force-legacy=false (else virtiofsd panics), memfd shared
/// memory so virtiofsd can map guest RAM.
/// Under TCG the vCPUs share one host thread (thread=single): with one
/// thread per vCPU (QEMU 7.2), Node crashed at random in V8's WebAssembly
/// tier-up (SIGSEGV, SIGTRAP, "unreachable" and out-of-bounds traps: 6 of 26
/// `node` runs of grok's tiktoken with 2 vCPUs, none of 10 with 1 vCPU nor
/// of 10 single-threaded; none of 8 with V8's background WebAssembly
/// compilation off, while -pku, -avx* and --no-wasm-tier-up changed
/// nothing): code compiled on one vCPU while another runs it is the likely
/// cause. The price: such a run 1.9x slower; an agent's scripted e2e run
/// 1.0x (OpenCode) to 1.25x (Gemini CLI, Grok).
std::vector<std::string> buildQemuArgs(const VmConfig& config);

/// The kernel command line buildQemuArgs passes (-append).
std::string kernelCmdline(const VmConfig& config);

}  // namespace airlock::vm
