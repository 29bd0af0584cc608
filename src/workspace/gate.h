#pragma once
// The review gate as one library call: read the agent's change set, diff it
// three ways (baseline, agent, live workspace), classify every item (held
// back, git metadata, link escapes), decide (by policy or through a
// ReviewTerminal), flush what was accepted, keep the rest in the session.
// No printing and no terminal checks here: the caller shows the outcome
// (cli/review_output.h) and owns the terminal.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "workspace/diff.h"
#include "workspace/flush.h"
#include "workspace/git_import.h"
#include "workspace/ignore.h"
#include "workspace/manifest.h"
#include "workspace/review.h"

namespace airlock::workspace {

/// Everything one review needs.
struct GateRequest {
  std::string workspace;  ///< the live project directory (flushed into)
  std::string session;    ///< the session directory: staging (review-XXXXXX), pending/, reviewed, session.log
  std::string snapshot;   ///< the session's private copy ("" = none); the "before" of `after`
  /// The agent's result: an OCI layer tar (the guest's export) or "-" for
  /// `changeSetFd`, or else `after`, a directory compared with `snapshot`.
  std::string changeSet;
  int changeSetFd = -1;   ///< read when changeSet is "-" (not owned)
  std::string after;
  std::string stateDir;   ///< where flush journals are found ($XDG_STATE_HOME/airlock)
  ReviewMode mode = ReviewMode::Interactive;
  std::string modeName = "interactive";  ///< as given, for the summary line
  uint64_t maxDiffBytes = 1 << 20;       ///< larger files get a summary, not a diff
  uint32_t umask = 022;                  ///< the user's umask: the mode new files land with
  std::optional<FileOwner> owner;        ///< who new files belong to (FlushContext::owner)
  ProgressFn waiting;                    ///< told when the flush waits for another session's (FlushContext::waiting)
  /// The agent's commits in the workspace's `.git` come back under this
  /// prefix ("refs/airlock/<session>/"; "" = not imported), as `gitImport` says.
  std::string gitRefPrefix;
  GitImportMode gitImport = GitImportMode::kRefsOnly;
};

/// What one review did, for the caller to show and to turn into an exit code.
struct GateOutcome {
  std::vector<DiffItem> items;       ///< every change, in path order
  std::vector<Decision> decisions;   ///< parallel to items (Conflict also for flush-time conflicts)
  std::vector<bool> flushedItem;     ///< parallel to items: it reached the workspace
  std::vector<std::string> messages; ///< parallel to items: flush message, skip reason or conflict reason
  std::vector<std::string> flushConflicts;  ///< "not flushed: ..." lines of flush-time conflicts
  size_t flushed = 0;         ///< changes written into the workspace
  size_t pending = 0;         ///< rejected, held back or blocked: kept in the session
  size_t conflicts = 0;       ///< changed on the host: kept, never overwritten
  size_t skipped = 0;         ///< FIFOs, sockets, device nodes, oversized files: never flushed
  size_t lostContent = 0;     ///< skipped entries that carried content (exit 74)
  size_t gitKept = 0;         ///< git metadata kept in the session (never flushed; not "pending")
  size_t heldBack = 0;        ///< of pending: held back
  size_t alreadyApplied = 0;  ///< the host already had the agent's version
  std::string keptDir;        ///< where the kept changes are ("" = none kept)
  GitImport git;              ///< the agent's commits brought back (importAgentCommits())
  std::string summary;        ///< "review (auto): 3 flushed, ...; exit 70" (also in the session log)
  /// 0; exit_code::kConflict, kUnsafeChangeSet (content lost) or
  /// kReviewPending, in that order of precedence.
  int exitCode() const;
};

/// Checks that `request` can be reviewed before anything is staged: exactly
/// one of changeSet and after, a snapshot for after, a terminal (`term`) for
/// ReviewMode::Interactive, a session directory. kUsage errors that name the fix.
Result<> checkGateRequest(const GateRequest& request, const ReviewTerminal* term);

/// The ignore rules of a review: the session's saved patterns
/// (`savedPatterns`, the text of SESSION/ignore), the workspace's live
/// .airlockignore, and `excludes`. Warnings (bad patterns) are returned once
/// each. Errors: kUsage for an unopenable workspace, kHostNotReady for an
/// unusable .airlockignore (a FIFO, too big, unreadable).
struct ReviewRules {
  IgnoreRules rules;                  ///< what the review ignores (never flushed)
  std::vector<std::string> warnings;  ///< one line per bad pattern, each once
};
Result<ReviewRules> loadReviewRules(const std::string& workspace, const std::string& savedPatterns,
                                    const std::vector<std::string>& excludes);

/// Runs the review of `request` against `baseline` with `rules`. `term` is
/// needed for ReviewMode::Interactive; checkGateRequest() is applied first. Staging
/// lives in a review-XXXXXX directory of the session, removed however the
/// review ends short of a crash. Errors: kUsage (bad input), kUnsafeChangeSet
/// (a refused change set: nothing flushed), kConflict is never an error (it is
/// in the outcome), others kInternal.
Result<GateOutcome> runGate(const GateRequest& request, const Manifest& baseline, const IgnoreRules& rules,
                            ReviewTerminal* term);

/// What a read-only look at a change set found (previewGate()).
struct GatePreview {
  std::vector<DiffItem> items;       ///< every change, in path order, classified as a review would
  std::vector<std::string> patches;  ///< parallel to items when asked for: ThreeWayDiff::patch(), or its error
  size_t alreadyApplied = 0;         ///< changes the live workspace already has
};

/// The review's three-way diff and classification of `request`'s change set
/// (its mode is not used), without deciding, flushing or keeping anything:
/// `airlock diff`. Staging lives in a preview-XXXXXX directory of the
/// session, removed before this returns. `patches`: render each item's
/// patch (`color`: with airlock's colors). Errors as runGate()'s.
Result<GatePreview> previewGate(const GateRequest& request, const Manifest& baseline, const IgnoreRules& rules,
                                bool patches, bool color);

/// Removes the review-XXXXXX and preview-XXXXXX staging directories a killed review left in `session`.
void removeStaleStaging(const std::string& session);

}  // namespace airlock::workspace
