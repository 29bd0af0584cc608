// `airlock snapshot` and `airlock review`: drive the review gate by hand.
//
//   airlock snapshot --workspace DIR --session SESSION
//       private copy + baseline manifest in SESSION (snapshot/, manifest, ignore)
//   airlock review --workspace DIR --session SESSION (--change-set LAYER.tar | --after DIR)
//       three-way diff, review (interactive, auto, all, none), crash-safe flush;
//       whatever is not flushed is kept in SESSION/pending.
//
// Both verbs are registered by addReviewCommand (main.cc calls it once).

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/repeatable.h"
#include "cli/review.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "workspace/changeset.h"
#include "workspace/diff.h"
#include "workspace/flush.h"
#include "workspace/ignore.h"
#include "workspace/pending.h"
#include "workspace/relpath.h"
#include "workspace/review.h"
#include "workspace/snapshot.h"

namespace airlock::cli {
namespace {

namespace ws = airlock::workspace;
using json = nlohmann::json;

struct SnapshotArgs {
  std::string workspace = ".";
  std::string session;
  std::vector<std::string> excludes;
  unsigned threads = 0;
  bool noReflink = false;
  bool json = false;
};

int report(const Error& e) {
  std::fprintf(stderr, "airlock: %s\n", e.message.c_str());
  return e.code == 1 ? exit_code::kInternal : e.code;
}

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

/// Rules = session's saved patterns + live .airlockignore + --exclude.
Result<ws::IgnoreRules> loadRules(const std::string& workspace, const std::string& session,
                                  const std::vector<std::string>& excludes) {
  ws::IgnoreRules rules;
  if (!session.empty()) {
    if (auto saved = readFile(session + "/ignore", 1 << 20)) rules.addLines(*saved);
  }
  Fd root(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return failWith(exit_code::kUsage, "cannot open workspace {}: {}", workspace, errnoText(errno));
  if (auto r = rules.loadFile(root.get()); !r) return std::unexpected(r.error());
  for (const auto& e : excludes) rules.addPattern(e);
  return rules;
}

int runSnapshot(const SnapshotArgs& a) {
  if (a.session.empty()) return report(Error{"--session DIR is required (a new directory)", exit_code::kUsage});
  auto rules = loadRules(a.workspace, "", a.excludes);
  if (!rules) return report(rules.error());
  if (auto r = makeDirs(a.session, 0700); !r) return report(r.error());
  ws::SnapshotOptions opt;
  opt.threads = a.threads;
  opt.reflink = !a.noReflink;
  bool tty = ::isatty(2) && !a.json;
  opt.progress = [&](const ws::SnapshotProgress& p) {
    if (tty && p.filesTotal >= 5000)
      std::fprintf(stderr, "\rsnapshot: %llu/%llu files, %llu MiB", static_cast<unsigned long long>(p.filesDone),
                   static_cast<unsigned long long>(p.filesTotal), static_cast<unsigned long long>(p.bytesDone >> 20));
  };
  auto res = ws::takeSnapshot(a.workspace, a.session + "/snapshot", *rules, opt);
  if (tty) std::fprintf(stderr, "\r\x1b[K");
  if (!res) return report(res.error());
  if (auto r = res->manifest.save(a.session + "/manifest"); !r) return report(r.error());
  if (auto r = writeFileAtomic(a.session + "/ignore", rules->userText(), 0600); !r) return report(r.error());
  for (const auto& w : res->warnings) std::fprintf(stderr, "airlock: warning: %s\n", w.c_str());
  if (a.json) {
    json j = {{"session", a.session},   {"entries", res->manifest.size()}, {"bytes", res->bytes},
              {"reflinked", res->reflinked}, {"copied", res->copied},   {"excluded", res->excluded.size()},
              {"warnings", res->warnings}};
    std::printf("%s\n", dump(j).c_str());
  } else {
    std::printf("snapshot of %s in %s: %zu entries, %llu MiB (%llu files reflinked, %llu copied), %zu excluded\n",
                a.workspace.c_str(), a.session.c_str(), res->manifest.size(),
                static_cast<unsigned long long>(res->bytes >> 20), static_cast<unsigned long long>(res->reflinked),
                static_cast<unsigned long long>(res->copied), res->excluded.size());
  }
  return 0;
}

/// The review itself, once the change set to read is known.
int reviewChanges(const ReviewArgs& a) {
  auto mode = ws::parseReviewMode(a.mode);
  if (!mode) return report(mode.error());
  if (a.changeSet.empty() == a.after.empty())
    return report(Error{"give exactly one of --change-set LAYER.tar or --after DIR (a session with pending "
                        "changes needs neither)",
                        exit_code::kUsage});
  if (a.onInterrupted != "complete" && a.onInterrupted != "rollback")
    return report(Error{"--on-interrupted must be complete or rollback", exit_code::kUsage});
  std::string state = stateDir();

  // 1. An interrupted flush into this workspace is settled first.
  auto rec = ws::recoverFlush(a.workspace, state, a.onInterrupted == "rollback" ? ws::RecoveryMode::RollBack
                                                                              : ws::RecoveryMode::Complete);
  if (!rec) return report(rec.error());
  if (rec->found) {
    std::fprintf(stderr, "airlock: an interrupted flush from %s was %s (%zu steps)\n", rec->sessionDir.c_str(),
                 a.onInterrupted == "rollback" ? "rolled back" : "completed",
                 a.onInterrupted == "rollback" ? rec->undone : rec->applied);
    for (const auto& n : rec->notes) std::fprintf(stderr, "airlock:   left alone: %s\n", n.c_str());
  }

  // 2. Session, rules, baseline.
  std::string session = a.session;
  if (session.empty()) {
    if (auto r = makeDirs(state + "/sessions", 0700); !r) return report(r.error());
    std::string tmpl = state + "/sessions/review-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return report(Error{"cannot create a session directory under " + state, exit_code::kInternal});
    session = tmpl;
  }
  auto rules = loadRules(a.workspace, a.session, a.excludes);
  if (!rules) return report(rules.error());
  std::string manifestFile = !a.baseline.empty() ? a.baseline : a.session.empty() ? "" : a.session + "/manifest";
  ws::Manifest baseline;
  if (!manifestFile.empty()) {
    auto m = ws::Manifest::load(manifestFile);
    if (!m) return report(m.error());
    baseline = std::move(*m);
  } else {
    std::fprintf(stderr, "airlock: warning: no --session or --baseline: the workspace as it is now is the baseline, "
                         "so host edits made during the agent's run cannot be detected\n");
    auto scan = ws::scanTree(a.workspace, *rules);
    if (!scan) return report(scan.error());
    baseline = std::move(scan->manifest);
  }

  // 3. The change set.
  std::string work = session + "/review-XXXXXX";
  if (!::mkdtemp(work.data())) return report(Error{"cannot create a directory in " + session, exit_code::kInternal});
  Result<ws::ChangeSet> cs = std::unexpected(Error{});
  if (!a.changeSet.empty()) {
    Fd in(a.changeSet == "-" ? ::dup(0) : ::open(a.changeSet.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return report(Error{fmt::format("cannot open change set {}: {}", a.changeSet, errnoText(errno)), exit_code::kUsage});
    cs = ws::ChangeSet::fromTar(in.get(), work + "/staged");
  } else {
    if (a.session.empty())
      return report(Error{"--after needs --session (its snapshot is the baseline to compare with)", exit_code::kUsage});
    cs = ws::ChangeSet::fromDirectories(a.session + "/snapshot", a.after, work + "/staged", *rules);
  }
  if (!cs) return report({cs.error().message, cs.error().code == 1 ? exit_code::kUnsafeChangeSet : cs.error().code});

  // 4. Three-way diff.
  Fd wsFd(::open(a.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd snapFd(a.session.empty() ? -1 : ::open((a.session + "/snapshot").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ws::ThreeWayDiff diff(baseline, *cs, *rules, wsFd.get(), snapFd.get(), a.maxDiffBytes);
  auto result = diff.run();
  if (!result) return report(result.error());
  ws::classifyItems(result->items);
  auto& items = result->items;

  // 5. Review.
  ws::StdioTerminal term;
  bool tty = ::isatty(0) && ::isatty(1);
  auto decisions = ws::decide(items, *mode, diff, &term, tty);
  if (!decisions) return report(decisions.error());

  // 6. Flush the accepted ones.
  std::vector<const ws::DiffItem*> accepted;
  for (size_t i = 0; i < items.size(); ++i)
    if ((*decisions)[i] == ws::Decision::Accepted) accepted.push_back(&items[i]);
  ws::FlushReport flushed;
  if (!accepted.empty()) {
    auto f = ws::flush(accepted, ws::FlushContext{a.workspace, work, state, {}});
    if (!f) return report(f.error());
    flushed = std::move(*f);
  }
  std::map<std::string, const ws::FlushItemResult*> byPath;
  for (const auto& r : flushed.items) byPath[r.path] = &r;

  // 7. Keep everything that was not flushed.
  std::vector<bool> keep(items.size());
  size_t pending = 0, conflicts = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = byPath.find(items[i].path);
    bool done = it != byPath.end() && it->second->status == ws::FlushItemResult::Status::Flushed;
    keep[i] = !done;
    if ((*decisions)[i] == ws::Decision::Conflict ||
        (it != byPath.end() && it->second->status == ws::FlushItemResult::Status::Conflict)) {
      ++conflicts;
      (*decisions)[i] = ws::Decision::Conflict;
    } else if (!done && (*decisions)[i] != ws::Decision::Excluded) {
      ++pending;
    }
  }
  auto kept = ws::keepPending(items, *decisions, keep, diff, session);
  if (!kept) return report(kept.error());
  // Staged content is now either flushed or kept in pending/changes.tar.
  (void)removeTree(work);

  if (a.json) {
    json j = {{"session", session}, {"flushed", flushed.flushed}, {"conflicts", conflicts}, {"pending", pending},
              {"already_applied", result->alreadyApplied}, {"kept", *kept}, {"items", json::array()}};
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& it = items[i];
      auto fr = byPath.find(it.path);
      j["items"].push_back({{"path", ws::displayPath(it.path)}, {"kind", ws::changeKindName(it.kind)},
                            {"decision", ws::decisionName((*decisions)[i])},
                            {"flushed", fr != byPath.end() && fr->second->status == ws::FlushItemResult::Status::Flushed},
                            {"lines_added", it.linesAdded}, {"lines_removed", it.linesRemoved},
                            {"binary", it.binary}, {"held_back", it.heldBack}, {"build_entry", it.buildEntry},
                            {"conflict", it.conflict}, {"message", fr != byPath.end() ? fr->second->message : it.conflictReason}});
    }
    std::printf("%s\n", dump(j).c_str());
  } else {
    if (items.empty()) std::printf("no changes to review\n");
    else std::printf("%s", ws::summaryTable(items, &*decisions).c_str());
    for (const auto& r : flushed.items)
      if (r.status == ws::FlushItemResult::Status::Conflict)
        std::printf("not flushed: %s\n", r.message.c_str());
    std::printf("flushed %zu change(s) into %s", flushed.flushed, a.workspace.c_str());
    if (result->alreadyApplied) std::printf("; %zu already present", result->alreadyApplied);
    std::printf("\n");
    if (!kept->empty())
      std::printf("kept %zu change(s) in %s (changes.tar, changes.patch)\n", pending + conflicts, kept->c_str());
  }
  if (conflicts) return exit_code::kConflict;
  if (pending) return exit_code::kReviewPending;
  return 0;
}

}  // namespace

int runReview(const ReviewArgs& a) {
  ReviewArgs args = a;
  // `airlock review -s SESSION` alone reviews what an earlier review kept.
  if (args.changeSet.empty() && args.after.empty() && !args.session.empty() &&
      ::access((args.session + "/pending/changes.tar").c_str(), R_OK) == 0)
    args.changeSet = args.session + "/pending/changes.tar";
  return reviewChanges(args);
}

void addReviewCommand(CLI::App& app, int& exitCode) {
  auto snap = std::make_shared<SnapshotArgs>();
  CLI::App* s = app.add_subcommand("snapshot", "Copy a workspace into a session directory and record its baseline manifest");
  s->add_option("--workspace,-w", snap->workspace, "the project directory (default: .)");
  s->add_option("--session,-s", snap->session, "session directory to create/fill (snapshot/, manifest)")->required();
  repeatable(s->add_option("--exclude", snap->excludes, "extra ignore pattern (gitignore syntax); repeatable"));
  s->add_option("--threads", snap->threads, "copy threads (default: one per CPU)");
  s->add_flag("--no-reflink", snap->noReflink, "always copy bytes, never FICLONE");
  s->add_flag("--json", snap->json, "machine-readable output");
  s->callback([snap, &exitCode] { exitCode = runSnapshot(*snap); });

  auto rev = std::make_shared<ReviewArgs>();
  CLI::App* r = app.add_subcommand("review", "Review an agent's change set against the workspace and flush what you accept");
  r->add_option("--workspace,-w", rev->workspace, "the live project directory (default: .)");
  r->add_option("--session,-s", rev->session, "session from `airlock snapshot` (baseline manifest + snapshot copy)");
  r->add_option("--baseline", rev->baseline, "baseline manifest file (default: SESSION/manifest)");
  r->add_option("--change-set,-c", rev->changeSet, "the agent's changes as an OCI layer tar ('-' = stdin)");
  r->add_option("--after", rev->after, "or: a directory holding the agent's result, compared with the snapshot");
  r->add_option("--review", rev->mode, "interactive (default; needs a terminal), auto (all but held-back paths), all, none")
      ->check(CLI::IsMember({"interactive", "auto", "all", "none"}));
  repeatable(r->add_option("--exclude", rev->excludes, "extra ignore pattern (gitignore syntax); repeatable"));
  r->add_option("--max-diff-bytes", rev->maxDiffBytes, "larger files get a summary instead of a diff (default 1 MiB)");
  r->add_option("--on-interrupted", rev->onInterrupted, "an interrupted earlier flush: complete (default) or rollback");
  r->add_flag("--json", rev->json, "machine-readable output (implies no pager)");
  r->callback([rev, &exitCode] { exitCode = runReview(*rev); });
}

}  // namespace airlock::cli
