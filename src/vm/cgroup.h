#pragma once
// A cgroup v2 limit on one VM's QEMU: its memory and its number of tasks
// (threads count), so a guest that took over QEMU cannot take the host's
// memory or fill its process table. Used when airlock runs as root on a
// cgroup v2 host (an unprivileged user has no cgroup of its own to divide
// without a systemd scope; `airlock doctor` says so).

#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::vm {

/// The limits of one VM's cgroup (cgroup v2 interface files; Linux's
/// Documentation/admin-guide/cgroup-v2.rst).
struct CgroupLimits {
  uint64_t memoryMaxBytes = 0;  ///< memory.max: beyond it the kernel reclaims, then OOM-kills inside the cgroup
  uint64_t pidsMax = 0;         ///< pids.max: tasks (processes and threads) in the cgroup
};

/// The limits for a guest of `guestMiB` MiB: its RAM plus 2 GiB for QEMU
/// itself (TCG's translation cache takes up to 1 GiB, plus devices, I/O
/// buffers and page cache), plus `residentDiskBytes` (the writable disks
/// when they sit on tmpfs, whose pages are charged to QEMU and cannot be
/// reclaimed), and 512 tasks (vCPU and I/O threads).
CgroupLimits limitsForGuest(unsigned guestMiB, uint64_t residentDiskBytes = 0);

/// One VM's cgroup: `hierarchy`/airlock/`name`, with `limits` set (and no
/// swap), removed with the object (the caller reaps the process in it
/// first). `hierarchy` is where the cgroup v2 hierarchy is mounted
/// (/sys/fs/cgroup). The cgroup sits beside systemd's slices, outside the
/// cgroup of the airlock process: a limit set around airlock (systemd-run
/// -p MemoryMax=...) does not cover its QEMU, this one does.
class VmCgroup {
 public:
  /// Creates the cgroup: makes `hierarchy`/airlock (memory and pids
  /// enabled for its children) if missing, removes the cgroups of dead
  /// airlock processes in it (`name` starts with "vm-<airlock pid>-"; an
  /// airlock killed with SIGKILL leaves its own behind), then makes `name`
  /// with the limits. Errors: the hierarchy is not cgroup v2, the root does
  /// not enable memory or pids for its children (cgroup v1 holds them; its
  /// cgroup.subtree_control is systemd's and is not written), or no
  /// permission; what it made is removed again.
  static Result<VmCgroup> create(const std::string& hierarchy, const std::string& name, const CgroupLimits& limits);
  VmCgroup(VmCgroup&& other) noexcept;
  VmCgroup& operator=(VmCgroup&&) = delete;
  VmCgroup(const VmCgroup&) = delete;
  VmCgroup& operator=(const VmCgroup&) = delete;
  ~VmCgroup();

  /// The cgroup's directory.
  const std::string& path() const { return path_; }
  /// The cgroup's cgroup.procs, open for writing: a spawned child joins the
  /// cgroup with joinCgroup() before it execs.
  int procsFd() const { return procs_.get(); }

 private:
  VmCgroup(std::string path, Fd procs) : path_(std::move(path)), procs_(std::move(procs)) {}
  std::string path_;
  Fd procs_;
};

/// Moves the calling process into the cgroup whose cgroup.procs is open as
/// `procsFd` (writes "0"). For SpawnOptions::beforeExec: async-signal-safe.
/// Returns 0 or an errno.
int joinCgroup(int procsFd) noexcept;

}  // namespace airlock::vm
