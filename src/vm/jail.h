#pragma once
// Confinement of the host processes that run guest-facing code (QEMU): a
// guest that escapes through a device-emulation bug lands in a process that
// cannot gain privileges, holds no capabilities, cannot dump core, and (with
// QEMU's own seccomp sandbox) cannot spawn programs or change its uid.
// Anchors: libvirt's QEMU command line and Firecracker's jailer.
//
// Not yet here (issue 14): a separate unprivileged uid when airlock runs as
// root, and new mount/PID/IPC/UTS namespaces with a root holding only the
// VM's files.

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

}  // namespace airlock::vm
