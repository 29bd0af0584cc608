#include "cli/review_output.h"

#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/visible_text.h"
#include "session/session.h"
#include "workspace/relpath.h"

namespace airlock::cli {

namespace ws = airlock::workspace;
using json = nlohmann::json;

void printReviewText(std::FILE* out, const ws::GateOutcome& o, const std::string& workspace) {
  if (o.items.empty())
    std::fprintf(out, "no changes to review\n");
  else
    std::fprintf(out, "%s", ws::summaryTable(o.items, &o.decisions).c_str());
  for (const auto& message : o.flushConflicts) std::fprintf(out, "not flushed: %s\n", message.c_str());
  if (o.heldBack)
    std::fprintf(out,
                 "held back %zu change(s): they run code later on your host (git hooks, CI, editor tasks, agent "
                 "settings, package-manager configs); accept them in an interactive review (a) or with --review=all\n",
                 o.heldBack);
  if (o.skipped)
    std::fprintf(out,
                 "skipped %zu entr%s of the change set (FIFOs, sockets, device nodes, oversized files); not flushed\n",
                 o.skipped, o.skipped == 1 ? "y" : "ies");
  std::fprintf(out, "flushed %zu change(s) into %s", o.flushed, workspace.c_str());
  if (o.alreadyApplied) std::fprintf(out, "; %zu already present", o.alreadyApplied);
  std::fprintf(out, "\n");
  if (!o.keptDir.empty())
    std::fprintf(out, "kept %zu change(s) in %s (changes.tar, changes.patch)\n", o.pending + o.conflicts,
                 o.keptDir.c_str());
  if (o.gitKept)
    std::fprintf(out,
                 "%zu git metadata change(s) (under .git, in a git directory or links into one) stay in the "
                 "session: never flushed as files\n",
                 o.gitKept);
  printGitImport(out, o.git);
}

void printGitImport(std::FILE* out, const ws::GitImport& g) {
  if (!g.refused.empty()) std::fprintf(out, "git: the agent's commits were not imported: %s\n", g.refused.c_str());
  for (const auto& r : g.refs) {
    const std::string name = visibleText(r.guestRef.starts_with("refs/heads/") ? r.guestRef.substr(11) : r.guestRef);
    if (!r.refused.empty()) {
      std::fprintf(out, "git: %s not imported: %s\n", name.c_str(), r.refused.c_str());
      continue;
    }
    std::string what = r.newCommits
                           ? fmt::format("{} new commit{} on {}", r.newCommits, r.newCommits == 1 ? "" : "s", name)
                           : fmt::format("{} at {} (no new commits)", name, r.tip.substr(0, 7));
    if (!r.base.empty()) what += ", base " + r.base;
    std::fprintf(out, "git: %s -> %s\n", what.c_str(), visibleText(r.hostRef).c_str());
    for (const auto& line : r.log) std::fprintf(out, "  %s\n", line.c_str());
    if (r.newCommits > r.log.size()) std::fprintf(out, "  ... and %zu more\n", r.newCommits - r.log.size());
    if (!r.branch.empty()) std::fprintf(out, "  %s\n", r.branch.c_str());
  }
}

nlohmann::json changeItemJson(const ws::DiffItem& it) {
  json row = {{"path", ws::displayPath(it.path)},
              {"kind", ws::changeKindName(it.kind)},
              {"lines_added", it.linesAdded},
              {"lines_removed", it.linesRemoved},
              {"binary", it.binary},
              {"held_back", it.heldBack},
              {"build_entry", it.buildEntry},
              {"conflict", it.conflict},
              {"git_metadata", it.gitMetadata},
              {"control_characters", it.controlChars},
              {"non_ascii_name", hasNonAscii(it.path)}};
  if (it.kind == ws::ChangeKind::Skipped && it.agent.size) row["size"] = it.agent.size;
  if (it.base.exists && it.base.type != ws::EntryType::Symlink)
    row["mode_old"] = fmt::format("{:04o}", it.base.mode & 0777);
  if (it.agent.exists && it.agent.type != ws::EntryType::Symlink) {
    row["mode_new"] = fmt::format("{:04o}", ws::landingMode(it.agent));
    if (it.specialBitsDropped) row["mode_requested"] = fmt::format("{:04o}", it.agent.mode & 07777);
  }
  if (!it.base.sha256.empty()) row["sha256_old"] = it.base.sha256;
  if (!it.agent.sha256.empty()) row["sha256_new"] = it.agent.sha256;
  return row;
}

void printReviewJson(const ws::GateOutcome& o, const std::string& session) {
  json j = {{"session", session},   {"flushed", o.flushed},      {"conflicts", o.conflicts},
            {"pending", o.pending}, {"git_metadata", o.gitKept}, {"already_applied", o.alreadyApplied},
            {"skipped", o.skipped}, {"kept", o.keptDir},         {"items", json::array()}};
  for (size_t i = 0; i < o.items.size(); ++i) {
    json row = changeItemJson(o.items[i]);
    row["decision"] = ws::decisionName(o.decisions[i]);
    row["flushed"] = bool(o.flushedItem[i]);
    row["message"] = o.messages[i];
    j["items"].push_back(std::move(row));
  }
  json git = json::array();
  for (const auto& r : o.git.refs)
    git.push_back({{"ref", visibleText(r.guestRef)},  // valid ref names may hold C1 controls
                   {"imported_as", visibleText(r.hostRef)},
                   {"tip", r.tip},
                   {"base", r.base},
                   {"new_commits", r.newCommits},
                   {"log", r.log},
                   {"branch", r.branch},
                   {"refused", r.refused}});
  j["git"] = {{"refs", std::move(git)}, {"refused", o.git.refused}};
  std::printf("%s\n", j.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

void printResumeHint(const ws::GateOutcome& o, const std::string& stateDir, const std::string& session) {
  size_t left = o.pending + o.conflicts;
  if (left == 0 || session.empty()) return;
  std::fflush(stdout);
  // The counts as in the summary and --json: pending, and in conflict apart.
  std::string what = o.pending ? fmt::format("{} change{} pending", o.pending, o.pending == 1 ? "" : "s") : "";
  if (o.conflicts)
    what +=
        fmt::format("{}{} change{} in conflict", what.empty() ? "" : " and ", o.conflicts, o.conflicts == 1 ? "" : "s");
  std::fprintf(stderr, "airlock: %s; review %s with: %s\n", what.c_str(), left == 1 ? "it" : "them",
               session::resumeCommand(stateDir, session).c_str());
}

}  // namespace airlock::cli
