// `airlock snapshot` and `airlock review`: drive the review gate by hand.
//
//   airlock snapshot --workspace DIR --session SESSION
//       private copy + baseline manifest in SESSION (snapshot/, manifest, ignore)
//   airlock review --workspace DIR --session SESSION (--change-set LAYER.tar | --after DIR)
//       three-way diff, review (interactive, auto, all, none), crash-safe flush;
//       whatever is not flushed is kept in SESSION/pending.
//
// Both verbs are registered by addReviewCommand (main.cc calls it once).

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/repeatable.h"
#include "cli/review.h"
#include "cli/terminal_reset.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/visible_text.h"
#include "session/session.h"
#include "workspace/changeset.h"
#include "workspace/diff.h"
#include "workspace/flush.h"
#include "workspace/git_config_paths.h"
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
  if (auto r = rules.loadFile(root.get()); !r)  // a FIFO, a huge or unreadable .airlockignore: the user's to fix
    return failWith(r.error().code == 1 ? exit_code::kHostNotReady : r.error().code, "{}", r.error().message);
  for (const auto& e : excludes) rules.addPattern(e);
  std::set<std::string> said;  // the session's saved patterns and .airlockignore may repeat a line
  for (const auto& w : rules.warnings())
    if (said.insert(w).second) std::fprintf(stderr, "airlock: warning: %s\n", w.c_str());
  return rules;
}

int runSnapshot(const SnapshotArgs& a) {
  if (a.session.empty()) return report(Error{"--session DIR is required (a new directory)", exit_code::kUsage});
  auto rules = loadRules(a.workspace, "", a.excludes);
  if (!rules) return report(rules.error());
  struct stat st {};
  bool existed = ::stat(a.session.c_str(), &st) == 0;
  if (existed && (!S_ISDIR(st.st_mode) || ::access((a.session + "/manifest").c_str(), F_OK) == 0 ||
                  ::access((a.session + "/snapshot").c_str(), F_OK) == 0))
    return report(Error{fmt::format("--session {} already holds a snapshot (or is not a directory); pass a new "
                                    "directory, or remove it first",
                                    a.session),
                        exit_code::kUsage});
  if (auto r = makeDirs(a.session, 0700); !r)
    return report(Error{fmt::format("cannot create the session directory {}: {}; pass a directory you can create",
                                    a.session, r.error().message),
                        exit_code::kUsage});
  // A failed snapshot leaves nothing behind: no half-made copy, no empty session.
  struct Partial {
    std::string path;
    bool keep = false;
    ~Partial() {
      if (!keep) (void)removeTree(path);
    }
  } partial{existed ? a.session + "/snapshot" : a.session};
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
  if (auto r = session::recordWorkspace(a.session, a.workspace); !r) return report(r.error());
  partial.keep = true;
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

/// The review terminal: the controlling terminal (as `git add -p` does), so
/// it works whatever stdin and stdout are (`airlock run ... </dev/null | tee log`).
struct TtyTerminal {
  Fd tty;
  ws::FdTerminal term;
  TtyTerminal(Fd fd, std::string pager) : tty(std::move(fd)), term(tty.get(), std::move(pager)) {}
};

/// The user's terminal: the controlling terminal, or, when there is none
/// (`su -c`, `setsid`) but stdin and stdout are the same terminal, that
/// terminal reopened for reading and writing.
Fd openControllingTerminal() {
  Fd tty(::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (tty || !::isatty(0) || !::isatty(1)) return tty;
  struct stat in {}, out {};
  if (::fstat(0, &in) != 0 || ::fstat(1, &out) != 0 || in.st_rdev != out.st_rdev) return tty;
  return Fd(::open("/proc/self/fd/0", O_RDWR | O_NOCTTY | O_CLOEXEC));
}

/// The process's file creation mask (umask(2) can only be read by setting it;
/// it is set back at once).
uint32_t userUmask() {
  mode_t mask = ::umask(077);
  ::umask(mask);
  return static_cast<uint32_t>(mask);
}

constexpr const char* kNoTerminal =
    "interactive review needs a terminal (none is attached to this process); pass --review=auto (accept all but "
    "held-back paths) or --review=none (keep every change in the session, flush nothing)";

/// Removes review-XXXXXX staging directories a killed review left in `session`.
void removeStaleStaging(const std::string& session) {
  DIR* d = ::opendir(session.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d))
    if (std::string_view(e->d_name).starts_with("review-")) stale.push_back(session + "/" + e->d_name);
  ::closedir(d);
  for (const auto& path : stale) (void)removeTree(path);
}

/// The review itself, once the session, workspace and change set are known.
int reviewChanges(const std::string& state, const ReviewArgs& a, ReviewOutcome& outcome) {
  auto mode = ws::parseReviewMode(a.mode);
  if (!mode) return report(mode.error());
  if (a.changeSet.empty() == a.after.empty())
    return report(Error{"give exactly one of --change-set LAYER.tar or --after DIR (a session with pending "
                        "changes needs neither)",
                        exit_code::kUsage});
  std::unique_ptr<TtyTerminal> term;
  if (*mode == ws::ReviewMode::Interactive) {
    Fd tty = openControllingTerminal();
    if (!tty) return report(Error{kNoTerminal, exit_code::kUsage});
    const char* pager = std::getenv("PAGER");
    term = std::make_unique<TtyTerminal>(std::move(tty), pager && *pager ? pager : "less -R");
  }

  // 1. Session, rules, baseline.
  std::string session = a.session;
  if (session.empty()) {
    if (auto r = makeDirs(session::sessionsDir(state), 0700); !r) return report(r.error());
    std::string tmpl = session::sessionsDir(state) + "/review-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return report(Error{"cannot create a session directory under " + state, exit_code::kInternal});
    session = tmpl;
    // Its pending changes must resume into this workspace, from anywhere.
    if (auto r = session::recordWorkspace(session, a.workspace); !r) return report(r.error());
  }
  outcome.session = session;
  auto rules = loadRules(a.workspace, a.session, a.excludes);
  if (!rules) return report(rules.error());
  // A session of a review without one (review-XXXXXX) has no manifest: its baseline is the workspace.
  bool sessionManifest = !a.session.empty() && ::access((a.session + "/manifest").c_str(), F_OK) == 0;
  std::string manifestFile = !a.baseline.empty() ? a.baseline : sessionManifest ? a.session + "/manifest" : "";
  ws::Manifest baseline;
  if (!manifestFile.empty()) {
    auto m = ws::Manifest::load(manifestFile);
    if (!m) return report(m.error());
    baseline = std::move(*m);
  } else {
    std::fprintf(stderr, "airlock: warning: no baseline manifest (no --baseline, no session snapshot): the workspace as "
                         "it is now is the baseline, "
                         "so host edits made during the agent's run cannot be detected\n");
    auto scan = ws::scanTree(a.workspace, *rules);
    if (!scan) return report(scan.error());
    baseline = std::move(scan->manifest);
  }

  // 2. The change set, staged in a directory removed however the review ends
  // short of a crash (and by the next review of the session after one).
  std::string work = session + "/review-XXXXXX";
  if (!::mkdtemp(work.data())) return report(Error{"cannot create a directory in " + session, exit_code::kInternal});
  struct Staging {
    std::string path;
    ~Staging() { (void)removeTree(path); }
  } staging{work};
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

  // 3. Three-way diff.
  Fd wsFd(::open(a.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd snapFd(a.session.empty() ? -1 : ::open((a.session + "/snapshot").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ws::ThreeWayDiff diff(baseline, *cs, *rules, wsFd.get(), snapFd.get(), a.maxDiffBytes, userUmask());
  auto result = diff.run();
  if (!result) return report(result.error());
  // The user's git config names more code paths; kept-out and host-only paths are not modelled.
  ws::classifyItems(result->items, baseline, ws::HostView{wsFd.get(), &*rules, ws::gitConfigNamedPaths(a.workspace)});
  auto& items = result->items;

  // 4. Review.
  if (term) prepareReviewTerminal(term->tty.get());
  auto decisions = ws::decide(items, *mode, diff, term ? &term->term : nullptr, term != nullptr);
  if (!decisions) return report(decisions.error());

  // 5. Flush the accepted ones.
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

  // 6. Keep everything that was not flushed.
  std::vector<bool> keep(items.size());
  // Skipped entries never land; one that had content (a file over the size
  // limit) is work the user loses, so it makes the exit code 74. A FIFO,
  // socket or device node carries nothing and only gets listed.
  // Git metadata is kept too (the agent's commits come back through git, not
  // as files), but it is never flushable, so it does not make the run
  // "pending": a `git status` in the guest refreshing .git/index must not
  // turn every run into exit 70.
  size_t pending = 0, conflicts = 0, skipped = 0, lostContent = 0, gitKept = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = byPath.find(items[i].path);
    bool done = it != byPath.end() && it->second->status == ws::FlushItemResult::Status::Flushed;
    keep[i] = !done;
    if ((*decisions)[i] == ws::Decision::Conflict ||
        (it != byPath.end() && it->second->status == ws::FlushItemResult::Status::Conflict)) {
      ++conflicts;
      (*decisions)[i] = ws::Decision::Conflict;
    } else if ((*decisions)[i] == ws::Decision::Skipped) {
      ++skipped;
      if (items[i].agent.size > 0) ++lostContent;
    } else if ((*decisions)[i] == ws::Decision::GitMetadata) {
      ++gitKept;
    } else if (!done && (*decisions)[i] != ws::Decision::Excluded) {
      ++pending;
    }
  }
  auto kept = ws::keepPending(items, *decisions, keep, diff, session);
  if (!kept) return report(kept.error());
  outcome.flushed = flushed.flushed;
  outcome.pending = pending;
  outcome.conflicts = conflicts;
  int code = conflicts     ? exit_code::kConflict
             : lostContent ? exit_code::kUnsafeChangeSet
             : pending     ? exit_code::kReviewPending
                           : 0;
  std::string summary = fmt::format("review ({}): {} flushed, {} pending, {} in conflict, {} already present{}; exit {}",
                                    a.mode, flushed.flushed, pending, conflicts, result->alreadyApplied,
                                    gitKept ? fmt::format(", {} git metadata kept", gitKept) : "", code);
  session::appendSessionLog(session, summary);
  (void)writeFileAtomic(session + "/reviewed", summary + "\n", 0600);

  if (a.json) {
    json j = {{"session", session}, {"flushed", flushed.flushed}, {"conflicts", conflicts}, {"pending", pending},
              {"git_metadata", gitKept}, {"already_applied", result->alreadyApplied}, {"skipped", skipped}, {"kept", *kept},
              {"items", json::array()}};
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& it = items[i];
      auto fr = byPath.find(it.path);
      j["items"].push_back({{"path", ws::displayPath(it.path)}, {"kind", ws::changeKindName(it.kind)},
                            {"decision", ws::decisionName((*decisions)[i])},
                            {"flushed", fr != byPath.end() && fr->second->status == ws::FlushItemResult::Status::Flushed},
                            {"lines_added", it.linesAdded}, {"lines_removed", it.linesRemoved},
                            {"binary", it.binary}, {"held_back", it.heldBack}, {"build_entry", it.buildEntry},
                            {"conflict", it.conflict}, {"control_characters", it.controlChars},
                            {"non_ascii_name", hasNonAscii(it.path)},
                            {"message", fr != byPath.end() ? fr->second->message
                                        : !it.skipReason.empty() ? "skipped: " + it.skipReason
                                                                 : it.conflictReason}});
      auto& row = j["items"].back();
      if (it.kind == ws::ChangeKind::Skipped && it.agent.size) row["size"] = it.agent.size;
      if (it.base.exists && it.base.type != ws::EntryType::Symlink)
        row["mode_old"] = fmt::format("{:04o}", it.base.mode & 0777);
      if (it.agent.exists && it.agent.type != ws::EntryType::Symlink) {
        row["mode_new"] = fmt::format("{:04o}", ws::landingMode(it.agent));
        if (it.specialBitsDropped) row["mode_requested"] = fmt::format("{:04o}", it.agent.mode & 07777);
      }
      if (!it.base.sha256.empty()) row["sha256_old"] = it.base.sha256;
      if (!it.agent.sha256.empty()) row["sha256_new"] = it.agent.sha256;
    }
    std::printf("%s\n", dump(j).c_str());
  } else {
    if (items.empty()) std::printf("no changes to review\n");
    else std::printf("%s", ws::summaryTable(items, &*decisions).c_str());
    for (const auto& r : flushed.items)
      if (r.status == ws::FlushItemResult::Status::Conflict)
        std::printf("not flushed: %s\n", r.message.c_str());
    size_t heldBack = std::count(decisions->begin(), decisions->end(), ws::Decision::HeldBack);
    if (heldBack)
      std::printf("held back %zu change(s): they run code later on your host (git hooks, CI, editor tasks, agent "
                  "settings, package-manager configs); accept them in an interactive review (a) or with --review=all\n",
                  heldBack);
    if (skipped)
      std::printf("skipped %zu entr%s of the change set (FIFOs, sockets, device nodes, oversized files); not flushed\n",
                  skipped, skipped == 1 ? "y" : "ies");
    std::printf("flushed %zu change(s) into %s", flushed.flushed, a.workspace.c_str());
    if (result->alreadyApplied) std::printf("; %zu already present", result->alreadyApplied);
    std::printf("\n");
    if (!kept->empty())
      std::printf("kept %zu change(s) in %s (changes.tar, changes.patch)\n", pending + conflicts, kept->c_str());
    if (gitKept)
      std::printf("%zu git metadata change(s) (under .git, in a git directory or links into one) stay in the "
                  "session: never flushed as files\n",
                  gitKept);
  }
  return code;
}

/// The workspace to flush into: the one the session records; a -w that names
/// another directory is refused.
Result<std::string> chooseWorkspace(const std::string& given, const std::string& session) {
  std::string recorded = session.empty() ? "" : session::recordedWorkspace(session);
  if (recorded.empty()) {
    if (!given.empty()) return given;
    if (!session.empty() && ::access((session + "/manifest").c_str(), F_OK) == 0)
      return failWith(exit_code::kUsage, "session {} does not record its workspace; pass -w DIR (the directory it "
                      "was taken from)", session);
    return std::string(".");
  }
  if (given.empty()) return recorded;
  char* real = ::realpath(given.c_str(), nullptr);
  std::string givenReal = real ? real : given;
  free(real);
  if (givenReal != recorded)
    return failWith(exit_code::kUsage, "-w {} is not the workspace of session {} ({}); drop -w, or pass -w {}", given,
                    session, recorded, recorded);
  return recorded;
}

}  // namespace

bool haveControllingTerminal() { return static_cast<bool>(openControllingTerminal()); }

void printResumeHint(const std::string& stateDir, const ReviewOutcome& outcome) {
  size_t left = outcome.pending + outcome.conflicts;
  if (left == 0 || outcome.session.empty()) return;
  std::fflush(stdout);
  std::fprintf(stderr, "airlock: %zu change%s pending; review %s with: %s\n", left, left == 1 ? "" : "s",
               left == 1 ? "it" : "them",
               session::resumeCommand(stateDir, outcome.session).c_str());
}

Result<bool> settleInterruptedFlush(const std::string& stateDir, const std::string& workspace, bool rollback) {
  auto rec = ws::recoverFlush(workspace, stateDir, rollback ? ws::RecoveryMode::RollBack
                                                              : ws::RecoveryMode::Complete);
  if (!rec) return std::unexpected(rec.error());
  if (!rec->found) return false;
  std::fprintf(stderr, "airlock: an interrupted flush from %s was %s (%zu steps)\n", rec->sessionDir.c_str(),
               rollback ? "rolled back" : "completed", rollback ? rec->undone : rec->applied);
  for (const auto& n : rec->notes) std::fprintf(stderr, "airlock:   left alone: %s\n", n.c_str());
  session::appendSessionLog(rec->sessionDir, fmt::format("interrupted flush {} ({} steps)",
                                                         rollback ? "rolled back" : "completed",
                                                         rollback ? rec->undone : rec->applied));
  removeStaleStaging(rec->sessionDir);
  return true;
}

int runReview(const std::string& stateDir, const ReviewArgs& a, ReviewOutcome* out) {
  ReviewOutcome local;
  ReviewOutcome& outcome = out ? *out : local;
  ReviewArgs args = a;
  if (args.onInterrupted != "complete" && args.onInterrupted != "rollback")
    return report(Error{"--on-interrupted must be complete or rollback", exit_code::kUsage});
  if (!args.session.empty()) {
    auto dir = session::resolveSessionDir(stateDir, args.session);
    if (!dir) return report(dir.error());
    args.session = *dir;
  }
  auto workspace = chooseWorkspace(args.workspace, args.session);
  if (!workspace) return report(workspace.error());
  args.workspace = *workspace;

  // An interrupted flush into this workspace is settled first.
  auto settled = settleInterruptedFlush(stateDir, args.workspace, args.onInterrupted == "rollback");
  if (!settled) return report(settled.error());
  if (!args.session.empty()) removeStaleStaging(args.session);

  // `airlock review -s SESSION` alone reviews what the session still holds:
  // what an earlier review kept, else the change set of a run whose review
  // never finished (killed at the prompt, terminal closed).
  if (args.changeSet.empty() && args.after.empty() && !args.session.empty()) {
    bool reviewed = ::access((args.session + "/reviewed").c_str(), F_OK) == 0;
    if (::access((args.session + "/pending/changes.tar").c_str(), R_OK) == 0)
      args.changeSet = args.session + "/pending/changes.tar";
    else if (!reviewed && ::access((args.session + "/changes.tar").c_str(), R_OK) == 0)
      args.changeSet = args.session + "/changes.tar";
    else if (reviewed || *settled) {
      std::printf("nothing pending in session %s\n", args.session.c_str());
      return 0;
    }
  }
  return reviewChanges(stateDir, args, outcome);
}

void addReviewCommand(CLI::App& app, int& exitCode, const HostContext& host) {
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
  r->add_option("--workspace,-w", rev->workspace,
                "the live project directory (default: the session's own workspace, else .)");
  r->add_option("--session,-s", rev->session,
                "session id (from `airlock run`) or directory (from `airlock snapshot`); alone, it resumes the "
                "session's pending review");
  r->add_option("--baseline", rev->baseline, "baseline manifest file (default: SESSION/manifest)");
  r->add_option("--change-set,-c", rev->changeSet, "the agent's changes as an OCI layer tar ('-' = stdin)");
  r->add_option("--after", rev->after, "or: a directory holding the agent's result, compared with the snapshot");
  r->add_option("--review", rev->mode, "interactive (default; answered on the controlling terminal), auto (all but held-back paths), all, none")
      ->check(CLI::IsMember({"interactive", "auto", "all", "none"}));
  repeatable(r->add_option("--exclude", rev->excludes, "extra ignore pattern (gitignore syntax); repeatable"));
  r->add_option("--max-diff-bytes", rev->maxDiffBytes, "larger files get a summary instead of a diff (default 1 MiB)");
  r->add_option("--on-interrupted", rev->onInterrupted, "an interrupted earlier flush: complete (default) or rollback");
  r->add_flag("--json", rev->json, "machine-readable output (implies no pager)");
  r->callback([rev, &exitCode, &host] {
    ReviewOutcome outcome;
    exitCode = runReview(host.dirs.state, *rev, &outcome);
    printResumeHint(host.dirs.state, outcome);
  });
}

}  // namespace airlock::cli
