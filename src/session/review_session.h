#pragma once
// Reviewing a session's changes: the gate (workspace/gate.h) with the
// session around it. Used by the runner after a run and by `airlock review`
// (a change set given by hand, or what a session still holds).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/host_context.h"
#include "session/ui.h"
#include "workspace/gate.h"
#include "workspace/git_import.h"
#include "workspace/review.h"

namespace airlock::session {

/// One review: of a change set given by hand, or of what a session holds.
struct ReviewRequest {
  std::string workspace;  ///< the live project; "" = the session's recorded one, else "."
  std::string session;    ///< session id or directory; "" = a new review-XXXXXX session
  std::string baseline;   ///< baseline manifest file; "" = SESSION/manifest (else the workspace as it is now)
  std::string changeSet;  ///< OCI layer tar ("-" = changeSetFd), or:
  int changeSetFd = -1;   ///< read for "-" (the CLI passes standard input; not owned)
  std::string after;      ///< a directory holding the agent's result
  workspace::ReviewMode mode = workspace::ReviewMode::Interactive;
  std::string modeName = "interactive";
  bool rollbackInterrupted = false;  ///< an interrupted flush is rolled back instead of completed
  /// The agent's commits come back under refs/airlock/<session name>/ (a
  /// named session's review only; `--git`).
  workspace::GitImportMode gitImport = workspace::GitImportMode::kRefsOnly;
  std::vector<std::string> excludes;  ///< extra ignore patterns
  uint64_t maxDiffBytes = 1 << 20;    ///< larger files get a summary, not a diff
};

/// What reviewSession() did.
struct ReviewResult {
  std::string session;    ///< the session directory reviewed ("" when none was chosen)
  std::string workspace;  ///< the workspace flushed into
  /// What the review did; nullopt when the session held nothing to review.
  std::optional<workspace::GateOutcome> outcome;
  /// 0, or the gate's code (kConflict, kUnsafeChangeSet, kReviewPending).
  int exitCode() const { return outcome ? outcome->exitCode() : 0; }
};

/// Resolves the session and workspace (a -w naming another directory than
/// the session's is refused), settles an interrupted flush, picks the change
/// set (what the request names, else what the session still holds: its
/// pending changes, or the change set of a run whose review never
/// finished), runs the gate with `ui`'s review terminal and records the
/// summary in the session. Errors carry exit codes (kUsage, kHostNotReady,
/// kUnsafeChangeSet, kInternal).
Result<ReviewResult> reviewSession(const HostContext& host, const ReviewRequest& request, Ui& ui);

/// What `airlock diff` looks at.
struct PreviewRequest {
  std::string session;  ///< session name, id or directory
  std::string
      changeSet;  ///< an OCI layer tar ("-" = changeSetFd); "" = what the session holds (as reviewSession() picks)
  int changeSetFd = -1;               ///< read for "-" (not owned)
  std::vector<std::string> excludes;  ///< extra ignore patterns
  uint64_t maxDiffBytes = 1 << 20;    ///< larger files get a summary, not a diff
  bool patches = true;                ///< render each item's patch
  bool color = false;                 ///< with airlock's colors
};

/// The review's diff of a session's changes, read-only: no lock, no flush,
/// nothing recorded (an interrupted flush is not settled either). The
/// baseline is the session's manifest and the workspace its recorded one.
/// nullopt when the session holds nothing to review. Errors: kUsage (no
/// such session, or one without a snapshot), kUnsafeChangeSet, kInternal.
Result<std::optional<workspace::GatePreview>> previewSession(const HostContext& host, const PreviewRequest& request,
                                                             Ui& ui);

/// Completes (or, if `rollback`, rolls back) an interrupted flush into
/// `workspace`, says so through `ui` and in its session's log, and removes
/// the staging directories that session's killed review left. Returns
/// whether there was one.
Result<bool> settleInterruptedFlush(const HostContext& host, const std::string& workspace, bool rollback, Ui& ui);

}  // namespace airlock::session
