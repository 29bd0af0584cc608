#pragma once
// Confinement of the host processes that run guest-facing code. QEMU: a
// guest that escapes through a device-emulation bug lands in a process that
// cannot gain privileges, holds no capabilities, cannot dump core, and (with
// QEMU's own seccomp sandbox) cannot spawn programs or change its uid; it
// sees a root holding only its program, the VM's files and four device
// nodes, has no network but its tap, and runs as an unprivileged uid even
// when airlock runs as root. virtiofsd (ShareJailSpec): acts as the shared
// directory's owner only. Anchors: libvirt's QEMU command line and
// Firecracker's jailer. (The KVM boot probe in vm/machine.cc runs QEMU
// unjailed: it boots only airlock's own kernel and init, which power off.)
//
// Not here (issue 14): a PID namespace (QEMU cannot fork under its sandbox,
// and sees no /proc), cgroup limits.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace airlock::vm {

/// QEMU's -sandbox value: its seccomp filter on, and the obsolete, privilege
/// raising (setuid and friends), process spawning (fork/exec) and resource
/// control (scheduler, affinity, NUMA policy) system calls denied, as
/// libvirt sets it.
inline constexpr const char* kQemuSandbox = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny";

/// Confines the calling process; for SpawnOptions::beforeExec, between fork
/// and exec (async-signal-safe: system calls only). Sets RLIMIT_CORE to 0
/// (guest memory never lands in a core file), empties the capability
/// bounding, ambient, inheritable, permitted and effective sets (so even a
/// uid-0 process execs with CapEff 0 and cannot regain any), and sets
/// no_new_privs (setuid and file capabilities are ignored by every later
/// exec). Without CAP_SETPCAP (a normal user) the bounding set is left as
/// is: such a process has no capabilities to lose. Returns 0 or the errno
/// of the step that failed.
int confineBeforeExec() noexcept;

/// The uid and gid of a jailed process when airlock runs as root: outside
/// the range of login accounts and system users, one per live airlock
/// process (`0x7f000000 + pid`, pids being below 2^22), so two sessions'
/// QEMUs cannot signal or trace each other.
uid_t jailUidFor(pid_t airlockPid);

/// What a jailed process sees: a fresh tmpfs root (read-only once built)
/// holding /usr (and the /bin, /lib, /lib64, /sbin links or binds) and
/// /etc/ld.so.cache read-only, /dev/{null,zero,urandom,kvm}, its own
/// directory read-write at `ownPath`, and the files of `files`; nothing else
/// of the host (no other file of /etc, no /home, /root, /proc, /sys, /tmp). New mount, IPC, UTS and
/// network namespaces (unix sockets by path still work; abstract sockets and
/// the host's network do not), and, when airlock runs as root, the uid and
/// gid `dropTo` with the supplementary groups `groups` (the /dev/kvm group).
/// The PID namespace is the spawner's part (SpawnOptions::newPidNamespace).
struct JailSpec {
  std::string root;                 ///< empty host directory the jail's tmpfs is mounted on
  std::string ownDir;               ///< host directory bound read-write at ownPath
  std::string ownPath = "/vm";      ///< where ownDir appears in the jail
  /// Files bound into the jail: `jailPath` is absolute, one directory below /
  /// (e.g. /in/kernel); read-only unless `writable`.
  struct File {
    std::string hostPath;
    std::string jailPath;
    bool writable = false;
  };
  std::vector<File> files;
  std::optional<uid_t> dropTo;      ///< uid (= gid) to become; empty: keep airlock's
  std::vector<gid_t> groups;        ///< supplementary groups with dropTo
};

/// How virtiofsd serves one share: in a private mount namespace holding the
/// shared directory at kShareSource (read-only and nosuid,nodev recursively,
/// or read-write and nosuid,nodev) and its socket directory at
/// kShareSocketDir, then in a user namespace that maps exactly one uid and
/// gid (the share's owner, under the same numbers), with the capabilities it
/// needs as ambient ones. So whatever the guest asks, files are read and
/// written as the owner only: a request as any other uid (guest root
/// included) fails, nothing can be chowned to another user, and device
/// nodes cannot be created.
struct ShareJailSpec {
  std::string source;               ///< the host directory shared
  bool readOnly = true;
  std::string socketDir;            ///< host directory (the owner's) where virtiofsd creates its socket
  uid_t ownerUid = 0;               ///< the only uid (and gid) virtiofsd acts as
  gid_t ownerGid = 0;
  /// airlock runs as root: the user namespace (created by root, so the owner
  /// has no power over it) maps ownerUid to itself, and virtiofsd becomes
  /// ownerUid inside it. Otherwise airlock is root of its own user namespace,
  /// which maps it to the owner (an unprivileged user shares only as itself).
  bool dropToOwner = false;
};

/// Where virtiofsd finds the share and creates its socket inside its namespace.
inline constexpr const char* kShareSource = "/run/airlock-share";
inline constexpr const char* kShareSocketDir = "/run/airlock-socket";

/// The two halves of starting virtiofsd in the namespaces of `spec`: the
/// child's beforeExec step (async-signal-safe; everything prepared here)
/// and the parent's afterFork step, which writes the child's uid and gid
/// maps (the child waits for it). Errors: the errno of the first call that
/// failed. Use each pair for one spawn.
struct ShareServerSteps {
  std::function<int()> beforeExec;
  std::function<int(pid_t)> afterFork;
};
ShareServerSteps shareServerSteps(const ShareJailSpec& spec);

/// A beforeExec step (see SpawnOptions) that builds the jail of `spec` in
/// the child and enters it, then calls confineBeforeExec. The caller must
/// hold CAP_SYS_ADMIN in its user namespace: root, or an unprivileged
/// airlock after egress::becomeNamespaceRoot. Everything it
/// needs is prepared here, so the step itself makes system calls only.
/// Errors (in the returned step): the errno of the first call that failed.
std::function<int()> jailBeforeExec(const JailSpec& spec);

}  // namespace airlock::vm
