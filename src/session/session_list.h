#pragma once
// The sessions on this host as `airlock ls` shows them: what each one runs
// (its meta record, written when it opens), and its state, read from the
// session directory and the liveness of the process that owns it. There is
// no daemon: a session is running while its owner holds the run lock.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace airlock::session {

/// What a session runs, recorded in SessionLayout::meta() when it opens.
struct SessionMeta {
  std::string label;        ///< the agent's name, or "run-image"
  int64_t created = 0;      ///< Unix time, seconds
  pid_t owner = 0;          ///< the airlock process that owns it (a detached session's supervisor)
  uint64_t ownerStart = 0;  ///< its start time (processStartTime), so a reused pid is never taken for it
  unsigned cpus = 0;        ///< vCPUs
  unsigned memoryMiB = 0;   ///< guest memory, MiB
  bool detached = false;    ///< started with run -d
};

/// Writes `meta` into the session directory `dir` (0600, replaced atomically).
Result<> writeSessionMeta(const std::string& dir, const SessionMeta& meta);

/// The meta record of `dir`; nullopt for a session made before records (or
/// an unreadable one).
std::optional<SessionMeta> readSessionMeta(const std::string& dir);

/// Where a session is in its life.
enum class SessionState {
  kRunning,        ///< its owner holds the run lock
  kReviewing,      ///< a review of it runs
  kPendingReview,  ///< ended; changes nobody accepted or rejected yet
  kExited,         ///< ended, nothing pending
  kDead,           ///< its owner died before the command exited (no exit code)
};

/// One session as `airlock ls` lists it.
struct SessionEntry {
  std::string id, dir, name, workspace;
  std::optional<SessionMeta> meta;
  SessionState state = SessionState::kDead;
  std::optional<int> exitCode;  ///< the command's, once it exited
  uint64_t hostMemoryBytes = 0; ///< resident memory of the owner and its descendants (QEMU), while running
};

/// "running", "exited (0)", "pending review", "reviewing", "dead".
std::string stateText(const SessionEntry& entry);

/// The command's exit code recorded in `dir` (SessionLayout::exitCode()).
std::optional<int> recordedExitCode(const std::string& dir);

/// Every session under sessionsDir(stateDir), oldest first (review-XXXXXX
/// sessions of hand-made reviews are left out).
std::vector<SessionEntry> listSessions(const std::string& stateDir);

/// The start time of process `pid` in clock ticks since boot (field 22 of
/// /proc/PID/stat); 0 when it is gone.
uint64_t processStartTime(pid_t pid);

/// Sends `signo` to the owner of the session in `dir` when it is still the
/// process `meta` recorded (same pid and start time, through a pidfd, so a
/// reused pid is never signalled) and still holds the run lock. False when
/// the session is not running.
bool signalSessionOwner(const std::string& dir, const SessionMeta& meta, int signo);

/// The resident memory, bytes, of process `pid` and all its descendants
/// (/proc/PID/status VmRSS, /proc/PID/task/TID/children); 0 when it is gone.
uint64_t processTreeMemory(pid_t pid);

}  // namespace airlock::session
