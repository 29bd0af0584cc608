#pragma once
// The flush: applies accepted changes to the live workspace, crash-safely.
//
// Every change is a transition of one path from its baseline state ("pre")
// to the agent's state ("post"). Before each transition the live path is
// re-inspected and must still be "pre" (else: conflict, skipped, reported);
// staged content must still hash to the reviewed digest. New content goes to
// a temp file in the same directory, is fsynced and renamed into place; mode
// bits are sanitized (no setuid/setgid/sticky); every path is resolved below
// the workspace root without following symlinks.
//
// A journal in <session>/flush records the plan and each step (fsynced), and
// backups of replaced file content; <stateDir>/flush/<workspace key> points
// to it while a flush is in progress. An I/O error (e.g. disk full) rolls
// back the steps already done; a crash leaves the journal for recoverFlush(),
// which the next airlock invocation on that workspace runs.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file_lock.h"
#include "workspace/diff.h"

namespace airlock::workspace {

/// Fault injection for tests.
struct FlushHooks {
  /// Called after each completed step with the number of steps done so far
  /// (a test may SIGKILL the process here).
  std::function<void(size_t stepsDone)> afterStep;
  /// Called before new content for `rel` is written; a non-zero errno value
  /// makes that write fail as if the kernel had returned it (e.g. ENOSPC).
  std::function<int(std::string_view rel)> writeFault;
};

/// A uid and gid files are given to (chown).
struct FileOwner {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

/// Where a flush runs and keeps its records.
struct FlushContext {
  std::string workspace;   ///< the live workspace root
  std::string sessionDir;  ///< journal and backups go to <sessionDir>/flush
  std::string stateDir;    ///< in-progress pointers go to <stateDir>/flush
  FlushHooks hooks;
  /// Who owns what the flush writes when airlock runs as root for another
  /// user's workspace (workspaceOwnerForFlush()): new files, directories and
  /// symlinks get this owner, a replaced file keeps its own. Unset: the
  /// process's uid and gid, as for any program the user runs.
  std::optional<FileOwner> owner;
  /// Told "waiting for another airlock process flushing into <workspace>"
  /// when another session's flush into the workspace runs now; the flush
  /// then waits for it (flushes into one workspace are serialised).
  ProgressFn waiting;
};

/// The owner the flush should give new files in `workspace`: its root
/// directory's uid and gid when the process runs as root (`euid` 0) for a
/// workspace that is not root's; nullopt otherwise (the process's own ids
/// are right) or when the workspace cannot be inspected.
std::optional<FileOwner> workspaceOwnerForFlush(const std::string& workspace, uint32_t euid);

/// The outcome for one item handed to flush().
struct FlushItemResult {
  enum class Status { Flushed, Conflict };
  std::string path;
  Status status = Status::Flushed;
  std::string message;  ///< why, for conflicts
};

/// The outcome of a whole flush.
struct FlushReport {
  std::vector<FlushItemResult> items;
  size_t flushed = 0;
  size_t conflicts = 0;
};

/// Applies `accepted` (items with conflict or excluded set, and skipped
/// items, are refused as conflicts), after any other flush into the same
/// workspace has finished (ctx.waiting is told). An item whose live path
/// another flush changed meanwhile no longer matches its baseline: a
/// conflict, never overwritten. Fails, with the workspace rolled back to how
/// it was, on an I/O error; fails without touching anything when a flush
/// into the workspace was interrupted (run recoverFlush() first).
Result<FlushReport> flush(const std::vector<const DiffItem*>& accepted, const FlushContext& ctx);

/// Waits for a flush into `workspace` (real path; flushes recorded under
/// `stateDir`) to finish and keeps new ones waiting until the lock is
/// released: a snapshot taken meanwhile sees the workspace whole, not half
/// flushed. `waiting` is told when it waits.
Result<FileLock> holdFlushes(const std::string& workspace, const std::string& stateDir, const ProgressFn& waiting);

/// The lock file holdFlushes() keeps for `workspace` under `stateDir`, for a
/// caller that removes a workspace of its own (an image's build VM).
std::string flushLockPath(const std::string& workspace, const std::string& stateDir);

/// What to do with an interrupted flush.
enum class RecoveryMode { Complete, RollBack };

/// What recoverFlush() did.
struct RecoveryReport {
  bool found = false;               ///< an interrupted flush existed
  std::string sessionDir;           ///< its session
  size_t applied = 0;               ///< steps completed now (Complete)
  size_t undone = 0;                ///< steps rolled back (RollBack)
  std::vector<std::string> notes;   ///< paths left alone because they changed meanwhile
};

/// Finds an interrupted flush into `workspace` (via `stateDir`) and completes
/// or rolls it back; a no-op (found = false) when there is none, including
/// a flush another process runs now (waited for; `waiting` is told).
/// `owner` as in FlushContext::owner.
Result<RecoveryReport> recoverFlush(const std::string& workspace, const std::string& stateDir, RecoveryMode mode,
                                    std::optional<FileOwner> owner = std::nullopt, const ProgressFn& waiting = {});

}  // namespace airlock::workspace
