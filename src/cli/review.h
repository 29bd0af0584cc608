#pragma once
// The review gate as one call: settle an interrupted flush, read the change
// set, three-way diff against the baseline and the live workspace, review
// (interactive or by policy), flush what was accepted, keep the rest in the
// session. Used by `airlock review` and by `airlock run` after the VM stops.

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace airlock::cli {

struct ReviewArgs {
  std::string workspace;        ///< the live project; "" = the session's recorded one, else "."
  std::string session;          ///< session directory (manifest, snapshot/, ignore); may be empty
  std::string baseline;         ///< baseline manifest; default SESSION/manifest
  std::string changeSet;        ///< OCI layer tar ("-" = stdin), or:
  std::string after;            ///< a directory with the agent's result
  std::string mode = "interactive";        ///< interactive, auto, all, none
  std::string onInterrupted = "complete";  ///< complete or rollback an interrupted flush
  std::vector<std::string> excludes;       ///< extra ignore patterns
  uint64_t maxDiffBytes = 1 << 20;         ///< larger files get a summary, not a diff
  bool json = false;                       ///< print the result as JSON
};

/// What a review left, for the caller's last line.
struct ReviewOutcome {
  std::string session;  ///< the session directory ("" before one was chosen)
  size_t flushed = 0, pending = 0, conflicts = 0;
};

/// Runs the review and flush, printing the summary. `args.session` may be a
/// session id or directory; alone (no change set) it resumes what the session
/// holds. Returns 0, or exit_code::kConflict / kReviewPending when changes
/// were left, or another airlock exit code on failure (after printing the
/// error). Fills `outcome` when given. `stateDir` is HostDirs::state
/// (sessions, flush journals).
int runReview(const std::string& stateDir, const ReviewArgs& args, ReviewOutcome* outcome = nullptr);

/// Prints "airlock: N changes pending; review them with: airlock review -s ID"
/// ("1 change pending; review it with: ...")
/// to stderr when the review left changes (sessions under `stateDir` by id).
void printResumeHint(const std::string& stateDir, const ReviewOutcome& outcome);

/// Completes (or, if `rollback`, rolls back) an interrupted flush into
/// `workspace`, says so on stderr and in its session's log, and removes the
/// staging directories that session's killed review left. Returns whether
/// there was one. The flush journals are under `stateDir`.
Result<bool> settleInterruptedFlush(const std::string& stateDir, const std::string& workspace, bool rollback);

/// True when this process has a controlling terminal (/dev/tty opens), which
/// is all interactive review needs: stdin and stdout may be redirected.
bool haveControllingTerminal();

}  // namespace airlock::cli
