#pragma once
// airlock's exit codes: the one table (README.md's "Exit codes" and every
// verb's --help footer are made from kExitCodeTable).
//
// The decision (DESIGN.md, "Exit codes"): when airlock itself succeeded, it
// exits with the command's own code, whatever it is (0-255, 128+N when the
// command was killed by signal N): scripts see what the agent said, as with
// `docker run` or `ssh`. airlock's own failures use 64-74, in the spirit of
// sysexits.h, and print an `airlock: ...` line on stderr first (the review's
// own outcomes, 70, 71 and 74 for a skipped file, are explained by the
// review's summary instead); the session log says which of the two a code
// was. A command that itself exits with 64-74 is told apart by those lines,
// not by the number.

namespace airlock::exit_code {

inline constexpr int kUsage = 64;          ///< bad flags or arguments
inline constexpr int kHostNotReady = 65;   ///< missing QEMU/kernel assets, no space, unreadable workspace file
inline constexpr int kVmFailed = 66;       ///< the VM crashed, panicked or stopped unexpectedly
inline constexpr int kImage = 67;          ///< image/rootfs could not be built, pulled or read
inline constexpr int kVerification = 68;   ///< image signature verification refused
inline constexpr int kEgress = 69;         ///< egress policy cannot be enforced on this host
inline constexpr int kReviewPending = 70;  ///< review left changes pending (rejected/held back)
inline constexpr int kConflict = 71;       ///< flush conflict: a file changed on the host
inline constexpr int kInternal = 72;       ///< any other airlock failure
inline constexpr int kBusy = 73;           ///< in use: a running session (review, rm), a review of it, a session on the project (state rm)
/// the change set was refused (unsafe entry; nothing flushed), or a file of it was over the size limit (never flushed)
inline constexpr int kUnsafeChangeSet = 74;

/// One row of the exit-code table.
struct ExitCodeRow {
  int code;
  const char* meaning;
};

/// airlock's own codes, in order, as users read them.
inline constexpr ExitCodeRow kExitCodeTable[] = {
    {kUsage, "usage: bad flags or arguments"},
    {kHostNotReady, "host not ready: QEMU, kernel assets or disk space missing, an unreadable workspace file, no subordinate ids (/etc/subuid, /etc/subgid) for a user-run share, or no SSH agent, key or known_hosts line for --git-ssh-agent"},
    {kVmFailed, "the VM failed: guest kernel panic, QEMU crash, lost control channel"},
    {kImage, "image: the rootfs could not be built, pulled or read"},
    {kVerification, "image signature verification refused"},
    {kEgress, "egress policy cannot be enforced on this host"},
    {kReviewPending, "review left changes pending (rejected or held back; kept in the session)"},
    {kConflict, "flush conflict: a file changed on the host; not overwritten"},
    {kInternal, "internal error"},
    {kBusy, "in use: the session is running (review, rm) or being reviewed, or (state rm) a session runs on the project"},
    {kUnsafeChangeSet, "the change set was refused as unsafe (nothing flushed), or a file of it was skipped for "
                       "its size (never flushed)"},
};

/// True for the codes airlock's review uses to say "changes were left"
/// (pending, conflict): they give way to a failing command's own code.
constexpr bool leftChanges(int code) { return code == kReviewPending || code == kConflict; }

/// The exit code of a session that ran a command: a failure of airlock's own
/// (`reviewCode` other than 0, pending or conflict) first, then the
/// command's own non-zero code, then the review's pending/conflict code.
constexpr int mergeExitCodes(int commandCode, int reviewCode) {
  if (reviewCode != 0 && !leftChanges(reviewCode)) return reviewCode;
  if (commandCode != 0) return commandCode;
  return reviewCode;
}

}  // namespace airlock::exit_code
