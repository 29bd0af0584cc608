#pragma once
// The snapshot half of a session, shared by `airlock run` and
// `airlock run-image -w DIR --review=MODE`: open the session (state dir,
// log, per-workspace lock), settle an interrupted flush, take the snapshot;
// after the guest is done, export its changes, stop the VM, review and flush.

#include <memory>
#include <string>
#include <vector>

#include "cli/review.h"
#include "common/error.h"
#include "session/session.h"
#include "vm/launcher.h"

namespace airlock::cli {

/// The agent user in the guest (DESIGN.md, "Guest contract"); the snapshot is
/// chowned to it when airlock runs as root.
inline constexpr uint32_t kAgentUid = 1000;

/// Opens the session for `workspace` under `stateDir` (HostDirs::state; exit
/// 73 when another session holds it, unless `wait`), completes an
/// interrupted flush, and unless `direct` takes the snapshot with
/// .airlockignore and `excludes` applied (removed when the session ends).
Result<std::unique_ptr<session::Session>> openSession(const std::string& stateDir, const std::string& workspace,
                                                      bool wait, bool quiet, bool direct,
                                                      const std::vector<std::string>& excludes);

/// What the review after a run should know about the agent.
struct ReviewPolicy {
  std::string mode;           ///< interactive, auto, all, none
  int agentCode = 0;          ///< the agent's exit code (128+N when killed by signal N)
  bool acceptFailed = false;  ///< --accept-failed: auto/all flush even when the agent failed
  std::string who = "the agent";  ///< what ran, for messages ("the command" for run-image)
  bool forced = false;        ///< the user ended the session: export with vm::forcedExportLimits()
};

/// Exports the guest's /workspace changes into the session, stops `machine`
/// (QEMU confirmed gone), then reviews and flushes them. When the agent
/// failed (non-zero exit) and the mode is auto or all, nothing is flushed
/// unless `acceptFailed`: the changes are kept pending and one line says so.
/// Returns the review's exit code (0, 70 pending, 71 conflict, 74 unsafe...)
/// and fills `outcome`; errors carry kVmFailed when the export failed.
Result<int> exportAndReview(const std::string& stateDir, session::Session& s, vm::Machine& machine,
                            const ReviewPolicy& policy, const std::vector<std::string>& excludes,
                            ReviewOutcome& outcome);

}  // namespace airlock::cli
