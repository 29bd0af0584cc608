#pragma once
// The review gate as one call: settle an interrupted flush, read the change
// set, three-way diff against the baseline and the live workspace, review
// (interactive or by policy), flush what was accepted, keep the rest in the
// session. Used by `airlock review` and by `airlock run` after the VM stops.

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::cli {

struct ReviewArgs {
  std::string workspace = ".";  ///< the live project
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

/// Runs the review and flush, printing the summary. Returns 0, or
/// exit_code::kConflict / kReviewPending when changes were left, or another
/// airlock exit code on failure (after printing the error).
int runReview(const ReviewArgs& args);

}  // namespace airlock::cli
