#include "workspace/gate.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "workspace/changeset.h"
#include "workspace/git_config_paths.h"
#include "workspace/pending.h"

namespace airlock::workspace {

int GateOutcome::exitCode() const {
  return conflicts     ? exit_code::kConflict
         : lostContent ? exit_code::kUnsafeChangeSet
         : pending     ? exit_code::kReviewPending
                       : 0;
}

Result<ReviewRules> loadReviewRules(const std::string& workspace, const std::string& savedPatterns,
                                    const std::vector<std::string>& excludes) {
  ReviewRules out;
  out.rules.addLines(savedPatterns);
  Fd root(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return failWith(exit_code::kUsage, "cannot open workspace {}: {}", workspace, errnoText(errno));
  if (auto r = out.rules.loadFile(root.get()); !r)  // a FIFO, a huge or unreadable .airlockignore: the user's to fix
    return failWith(r.error().code == exit_code::kInternal ? exit_code::kHostNotReady : r.error().code, "{}",
                    r.error().message);
  for (const auto& e : excludes) out.rules.addPattern(e);
  std::set<std::string> said;  // the session's saved patterns and .airlockignore may repeat a line
  for (const auto& w : out.rules.warnings())
    if (said.insert(w).second) out.warnings.push_back(w);
  return out;
}

void removeStaleStaging(const std::string& session) {
  for (const auto& name : listDir(session).value_or(std::vector<std::string>{}))
    if (name.starts_with("review-")) (void)removeTree(session + "/" + name);
}

Result<> checkGateRequest(const GateRequest& a, const ReviewTerminal* term) {
  if (a.changeSet.empty() == a.after.empty())
    return failWith(exit_code::kUsage, "give exactly one of --change-set LAYER.tar or --after DIR (a session with "
                    "pending changes needs neither)");
  if (!a.after.empty() && a.snapshot.empty())
    return failWith(exit_code::kUsage, "--after needs --session (its snapshot is the baseline to compare with)");
  if (a.mode == ReviewMode::Interactive && !term)
    return failWith(exit_code::kUsage, "interactive review needs a terminal (none is attached to this process); pass "
                    "--review=auto (accept all but held-back paths) or --review=none (keep every change in the "
                    "session, flush nothing)");
  if (a.session.empty()) return failWith(exit_code::kInternal, "a review needs a session directory");
  return {};
}

Result<GateOutcome> runGate(const GateRequest& a, const Manifest& baseline, const IgnoreRules& rules,
                            ReviewTerminal* term) {
  if (auto r = checkGateRequest(a, term); !r) return std::unexpected(r.error());

  // The change set, staged in a directory removed however the review ends
  // short of a crash (and by the next review of the session after one).
  std::string work = a.session + "/review-XXXXXX";
  if (!::mkdtemp(work.data()))
    return failWith(exit_code::kInternal, "cannot create a directory in {}: {}", a.session, errnoText(errno));
  struct Staging {
    std::string path;
    ~Staging() { (void)removeTree(path); }
  } staging{work};
  Result<ChangeSet> cs = std::unexpected(Error{});
  if (!a.changeSet.empty()) {
    Fd in(a.changeSet == "-" ? ::dup(a.changeSetFd) : ::open(a.changeSet.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return failWith(exit_code::kUsage, "cannot open change set {}: {}", a.changeSet, errnoText(errno));
    cs = ChangeSet::fromTar(in.get(), work + "/staged");
  } else {
    cs = ChangeSet::fromDirectories(a.snapshot, a.after, work + "/staged", rules);
  }
  if (!cs)
    return failWith(cs.error().code == exit_code::kInternal ? exit_code::kUnsafeChangeSet : cs.error().code, "{}",
                    cs.error().message);

  // Three-way diff, then classification in the final tree (the user's git
  // config names more code paths; kept-out and host-only paths are not modelled).
  Fd wsFd(::open(a.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd snapFd(a.snapshot.empty() ? -1 : ::open(a.snapshot.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ThreeWayDiff diff(baseline, *cs, rules, wsFd.get(), snapFd.get(), a.maxDiffBytes, a.umask);
  auto result = diff.run();
  if (!result) return std::unexpected(result.error());
  classifyItems(result->items, baseline, HostView{wsFd.get(), &rules, gitConfigNamedPaths(a.workspace)});

  GateOutcome out;
  out.items = std::move(result->items);
  out.alreadyApplied = result->alreadyApplied;
  auto& items = out.items;
  if (term) term->begin();
  auto decisions = decide(items, a.mode, diff, term, term != nullptr);
  if (!decisions) return std::unexpected(decisions.error());
  out.decisions = std::move(*decisions);

  // Flush the accepted ones.
  std::vector<const DiffItem*> accepted;
  for (size_t i = 0; i < items.size(); ++i)
    if (out.decisions[i] == Decision::Accepted) accepted.push_back(&items[i]);
  FlushReport flushed;
  if (!accepted.empty()) {
    auto f = flush(accepted, FlushContext{a.workspace, work, a.stateDir, {}, a.owner, a.waiting});
    if (!f) return std::unexpected(f.error());
    flushed = std::move(*f);
  }
  std::map<std::string, const FlushItemResult*> byPath;
  for (const auto& r : flushed.items) byPath[r.path] = &r;
  for (const auto& r : flushed.items)
    if (r.status == FlushItemResult::Status::Conflict) out.flushConflicts.push_back(r.message);

  // Keep everything that was not flushed. Skipped entries never land; one
  // that had content (a file over the size limit) is work the user loses,
  // so it makes the exit code 74. A FIFO, socket or device node carries
  // nothing and only gets listed. Git metadata is kept too (the agent's
  // commits come back through git, not as files), but it is never
  // flushable, so it does not make the run "pending": a `git status` in the
  // guest refreshing .git/index must not turn every run into exit 70.
  std::vector<bool> keep(items.size());
  out.flushedItem.assign(items.size(), false);
  out.messages.assign(items.size(), "");
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = byPath.find(items[i].path);
    bool done = it != byPath.end() && it->second->status == FlushItemResult::Status::Flushed;
    keep[i] = !done;
    out.flushedItem[i] = done;
    out.messages[i] = it != byPath.end()             ? it->second->message
                      : !items[i].skipReason.empty() ? "skipped: " + items[i].skipReason
                                                     : items[i].conflictReason;
    Decision& d = out.decisions[i];
    if (d == Decision::Conflict || (it != byPath.end() && it->second->status == FlushItemResult::Status::Conflict)) {
      ++out.conflicts;
      d = Decision::Conflict;
    } else if (d == Decision::Skipped) {
      ++out.skipped;
      if (items[i].agent.size > 0) ++out.lostContent;
    } else if (d == Decision::GitMetadata) {
      ++out.gitKept;
    } else if (!done && d != Decision::Excluded) {
      ++out.pending;
      if (d == Decision::HeldBack) ++out.heldBack;
    }
  }
  auto kept = keepPending(items, out.decisions, keep, diff, a.session);
  if (!kept) return std::unexpected(kept.error());
  out.keptDir = *kept;
  out.flushed = flushed.flushed;
  out.summary = fmt::format("review ({}): {} flushed, {} pending, {} in conflict, {} already present{}; exit {}",
                            a.modeName, out.flushed, out.pending, out.conflicts, out.alreadyApplied,
                            out.gitKept ? fmt::format(", {} git metadata kept", out.gitKept) : "", out.exitCode());
  return out;
}

}  // namespace airlock::workspace
