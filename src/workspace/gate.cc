#include "workspace/gate.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/visible_text.h"
#include "workspace/changeset.h"
#include "workspace/git_config_paths.h"
#include "workspace/linked_git_dir.h"
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
  for (const auto& name : listDir(session).value_or(std::vector<std::string>{})) {
    if (!name.starts_with("review-") && !name.starts_with("preview-")) continue;
    // One in use is locked by its review or `airlock diff` (stageAndDiff()).
    Fd dir(::open((session + "/" + name).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir && ::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) continue;
    (void)removeTree(session + "/" + name);
  }
}

Result<> checkGateRequest(const GateRequest& a, const ReviewTerminal* term) {
  if (a.changeSet.empty() == a.after.empty())
    return failWith(exit_code::kUsage,
                    "give exactly one of --change-set LAYER.tar or --after DIR (a session with "
                    "pending changes needs neither)");
  if (!a.after.empty() && a.snapshot.empty())
    return failWith(exit_code::kUsage, "--after needs --session (its snapshot is the baseline to compare with)");
  if (a.mode == ReviewMode::Interactive && !term)
    return failWith(exit_code::kUsage,
                    "interactive review needs a terminal (none is attached to this process); pass "
                    "--review=auto (accept all but held-back paths) or --review=none (keep every change in the "
                    "session, flush nothing)");
  if (a.session.empty()) return failWith(exit_code::kInternal, "a review needs a session directory");
  return {};
}

namespace {

/// A change set staged and diffed three ways, with its items classified:
/// what a review and a preview share. The staging directory goes with it.
struct StagedDiff {
  struct Staging {
    std::string path;
    Fd lock;  ///< the directory, flock()ed while in use: removeStaleStaging() leaves it
    ~Staging() { (void)removeTree(path); }
  } staging;
  std::optional<ChangeSet> changes;
  Fd workspace, snapshot;
  std::unique_ptr<ThreeWayDiff> diff;  ///< refers to changes and the caller's baseline and rules
  DiffResult result;
};

/// Stages `a`'s change set in a `prefix`XXXXXX directory of its session,
/// diffs it against `baseline` and the live workspace, and classifies the
/// items in the final tree.
Result<std::unique_ptr<StagedDiff>> stageAndDiff(const GateRequest& a, const Manifest& baseline,
                                                 const IgnoreRules& rules, const std::string& prefix) {
  // The change set, staged in a directory removed however the review ends
  // short of a crash (and by the next review of the session after one).
  std::string work = a.session + "/" + prefix + "XXXXXX";
  if (!::mkdtemp(work.data()))
    return failWith(exit_code::kInternal, "cannot create a directory in {}: {}", a.session, errnoText(errno));
  auto s = std::make_unique<StagedDiff>();
  s->staging.path = work;
  s->staging.lock.reset(::open(work.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!s->staging.lock || ::flock(s->staging.lock.get(), LOCK_EX) != 0)
    return failWith(exit_code::kInternal, "cannot lock {}: {}", work, errnoText(errno));
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
  s->changes = std::move(*cs);

  // Three-way diff, then classification in the final tree (the user's git
  // config names more code paths; kept-out and host-only paths are not modelled).
  s->workspace.reset(::open(a.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!a.snapshot.empty()) s->snapshot.reset(::open(a.snapshot.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  s->diff = std::make_unique<ThreeWayDiff>(baseline, *s->changes, rules, s->workspace.get(), s->snapshot.get(),
                                           a.maxDiffBytes, a.umask);
  auto result = s->diff->run();
  if (!result) return std::unexpected(result.error());
  s->result = std::move(*result);
  classifyItems(s->result.items, baseline, HostView{s->workspace.get(), &rules, gitConfigNamedPaths(a.workspace)});
  return s;
}

/// The agent's commits, when the request asks for them, the review is not
/// --review=none (which keeps everything for a later review, commits too)
/// and the workspace is a repository with its own `.git` directory. A
/// failure is reported in the result: the files' review stands either way.
GitImport importCommits(const GateRequest& a, const ChangeSet& changes, const std::string& work) {
  GitImport out;
  if (a.gitRefPrefix.empty() || a.gitImport == GitImportMode::kNone || a.mode == ReviewMode::None) return out;
  // The workspace's repository: its .git, or a linked worktree's common directory.
  std::string gitDir = a.workspace + "/.git";
  struct stat st;
  if (::lstat(gitDir.c_str(), &st) != 0) return out;
  if (!S_ISDIR(st.st_mode)) {
    auto linked = findLinkedGitDir(a.workspace);
    if (!linked) {
      out.refused = visibleText(linked.error().message);
      return out;
    }
    if (!*linked) return out;
    gitDir = (*linked)->gitDir;  // its HEAD; objects and refs are the common directory's
  }
  const std::string scratch = work + "/git-import";
  if (::mkdir(scratch.c_str(), 0700) != 0) {
    out.refused = fmt::format("cannot create {}: {}", scratch, errnoText(errno));
    return out;
  }
  auto imported = importAgentCommits(changes, gitDir, a.snapshot.empty() ? "" : a.snapshot + "/.git",
                                     a.gitRefPrefix, a.gitImport, scratch);
  if (!imported)
    out.refused = visibleText(imported.error().message);
  else
    out = std::move(*imported);
  return out;
}

}  // namespace

Result<GatePreview> previewGate(const GateRequest& a, const Manifest& baseline, const IgnoreRules& rules, bool patches,
                                bool color) {
  if (a.changeSet.empty() == a.after.empty() || a.session.empty())
    return failWith(exit_code::kInternal, "a preview needs one change set and a session directory");
  auto staged = stageAndDiff(a, baseline, rules, "preview-");
  if (!staged) return std::unexpected(staged.error());
  GatePreview out;
  out.items = std::move((*staged)->result.items);
  out.alreadyApplied = (*staged)->result.alreadyApplied;
  if (patches)
    for (const auto& item : out.items) {
      auto p = (*staged)->diff->patch(item, color);
      out.patches.push_back(p ? *p : p.error().message + "\n");
    }
  return out;
}

Result<GateOutcome> runGate(const GateRequest& a, const Manifest& baseline, const IgnoreRules& rules,
                            ReviewTerminal* term) {
  if (auto r = checkGateRequest(a, term); !r) return std::unexpected(r.error());
  auto staged = stageAndDiff(a, baseline, rules, "review-");
  if (!staged) return std::unexpected(staged.error());
  const std::string& work = (*staged)->staging.path;
  const ThreeWayDiff& diff = *(*staged)->diff;
  GateOutcome out;
  out.items = std::move((*staged)->result.items);
  out.alreadyApplied = (*staged)->result.alreadyApplied;
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
  out.git = importCommits(a, *(*staged)->changes, work);
  size_t imported = 0;
  for (const auto& r : out.git.refs) imported += r.refused.empty();
  out.summary = fmt::format("review ({}): {} flushed, {} pending, {} in conflict, {} already present{}{}; exit {}",
                            a.modeName, out.flushed, out.pending, out.conflicts, out.alreadyApplied,
                            out.gitKept ? fmt::format(", {} git metadata kept", out.gitKept) : "",
                            imported ? fmt::format(", {} git ref{} imported", imported, imported == 1 ? "" : "s") : "",
                            out.exitCode());
  return out;
}

}  // namespace airlock::workspace
