#pragma once
// airlock's own exit codes. Codes below 64 and 128+N belong to the command
// run in the guest (passed through unchanged); airlock's failures use 64-79,
// in the spirit of sysexits.h. The table is mirrored in README.md and --help.

namespace airlock::exit_code {

inline constexpr int kUsage = 64;          ///< bad flags or arguments
inline constexpr int kHostNotReady = 65;   ///< missing QEMU/virtiofsd/kernel assets, no space
inline constexpr int kVmFailed = 66;       ///< the VM crashed, panicked or stopped unexpectedly
inline constexpr int kImage = 67;          ///< image/rootfs could not be built, pulled or read
inline constexpr int kVerification = 68;   ///< image signature verification refused
inline constexpr int kEgress = 69;         ///< egress policy cannot be enforced on this host
inline constexpr int kReviewPending = 70;  ///< review left changes pending (rejected/held back)
inline constexpr int kConflict = 71;       ///< flush conflict: a file changed on the host
inline constexpr int kInternal = 72;       ///< any other airlock failure
inline constexpr int kBusy = 73;           ///< another session holds the workspace (see --wait)
/// the change set was refused (unsafe entry; nothing flushed), or a file of it was over the size limit (never flushed)
inline constexpr int kUnsafeChangeSet = 74;

}  // namespace airlock::exit_code
