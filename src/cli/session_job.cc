#include "cli/session_job.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli/review.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "workspace/flush.h"
#include "workspace/ignore.h"
#include "workspace/snapshot.h"

namespace airlock::cli {
namespace {

namespace ws = airlock::workspace;

/// Gives the snapshot to the guest's agent user, so it can edit the files
/// (the overlay copies them up with their owner).
void chownTree(const std::string& root) {
  nftw(
      root.c_str(),
      [](const char* path, const struct stat*, int, FTW*) {
        (void)!lchown(path, kAgentUid, kAgentUid);
        return 0;
      },
      64, FTW_PHYS);
}

/// 2. The snapshot: baseline manifest and private copy in the session
/// directory, with .airlockignore and the configured excludes applied.
Result<> takeSessionSnapshot(session::Session& s, const std::vector<std::string>& excludes, bool quiet) {
  s.phase("snapshot", "snapshot of " + s.workspace());
  ws::IgnoreRules rules;
  {
    Fd root(::open(s.workspace().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (auto r = rules.loadFile(root.get()); !r)  // a FIFO, a huge or unreadable .airlockignore: the user's to fix
      return failWith(r.error().code == 1 ? exit_code::kHostNotReady : r.error().code, "{}", r.error().message);
  }
  for (const auto& e : excludes) rules.addPattern(e);
  for (const auto& w : rules.warnings()) std::fprintf(stderr, "airlock: warning: %s\n", w.c_str());
  ws::SnapshotOptions snapOptions;
  auto snap = ws::takeSnapshot(s.workspace(), s.dir() + "/snapshot", rules, snapOptions);
  if (!snap) return std::unexpected(snap.error());
  for (const auto& w : snap->warnings) std::fprintf(stderr, "airlock: warning: %s\n", w.c_str());
  if (auto r = snap->manifest.save(s.dir() + "/manifest"); !r) return r;
  if (auto r = writeFileAtomic(s.dir() + "/ignore", rules.userText(), 0600); !r) return r;
  if (geteuid() == 0) chownTree(s.dir() + "/snapshot");
  s.log(fmt::format("snapshot: {} entries, {} excluded", snap->manifest.size(), snap->excluded.size()));
  // What never reaches the guest, and why; the names only on request.
  if (std::string kept = ws::keptOutSummary(*snap); !kept.empty()) {
    s.log(kept);
    if (!quiet) std::fprintf(stderr, "airlock: %s (`airlock info --excluded` lists them)\n", kept.c_str());
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<session::Session>> openSession(const std::string& stateDir, const std::string& workspace,
                                                      bool wait, bool quiet, bool direct,
                                                      const std::vector<std::string>& excludes) {
  auto session = session::Session::open(stateDir, workspace, wait);
  if (!session) return std::unexpected(session.error());
  auto& s = **session;
  s.setQuiet(quiet);
  if (auto settled = settleInterruptedFlush(stateDir, s.workspace(), false); !settled)
    return std::unexpected(settled.error());
  if (direct) {
    s.log("direct mode: the live workspace is shared read-write; no snapshot, no review");
    return session;
  }
  s.removeOnClose(s.dir() + "/snapshot");
  if (auto r = takeSessionSnapshot(s, excludes, quiet); !r) return std::unexpected(r.error());
  return session;
}

Result<int> exportAndReview(const std::string& stateDir, session::Session& s, vm::Machine& machine,
                            const ReviewPolicy& policy, const std::vector<std::string>& excludes,
                            ReviewOutcome& outcome) {
  s.phase("export", "collecting the guest's changes");
  auto exported = machine.vm().control().exportWorkspace(s.dir() + "/changes.tar",
                                                         policy.forced ? vm::forcedExportLimits() : vm::ExportLimits{});
  machine.stop();
  if (!exported)
    return failWith(exported.error().code == exit_code::kUnsafeChangeSet ? exit_code::kUnsafeChangeSet
                                                                         : exit_code::kVmFailed,
                    "{}", exported.error().message);
  s.log(fmt::format("change set: {} bytes", *exported));
  s.phase("review", "review");
  ReviewArgs review;
  review.workspace = s.workspace();
  review.session = s.dir();
  review.changeSet = s.dir() + "/changes.tar";
  review.mode = policy.mode;
  review.excludes = excludes;
  bool failed = policy.agentCode != 0 && (policy.mode == "auto" || policy.mode == "all");
  if (failed && !policy.acceptFailed) {
    review.mode = "none";
    std::string line = fmt::format("{} exited with {}, so --review={} flushes nothing: its changes are kept "
                                   "pending (--accept-failed flushes them anyway)",
                                   policy.who, policy.agentCode, policy.mode);
    s.log(line);
    std::fprintf(stderr, "airlock: %s\n", line.c_str());
  }
  return runReview(stateDir, review, &outcome);
}

}  // namespace airlock::cli
