#include "session/review_session.h"

#include <stdlib.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "session/layout.h"
#include "session/session.h"
#include "workspace/flush.h"
#include "workspace/manifest.h"
#include "workspace/snapshot.h"

namespace airlock::session {
namespace {

namespace ws = airlock::workspace;

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

/// The change set a session still holds for review: what an earlier review
/// kept, else the change set of a run whose review never finished; "" when
/// neither.
std::string heldChangeSet(const SessionLayout& layout) {
  if (::access(layout.pendingChangeSet().c_str(), R_OK) == 0) return layout.pendingChangeSet();
  if (!exists(layout.reviewed()) && ::access(layout.changeSet().c_str(), R_OK) == 0) return layout.changeSet();
  return "";
}

/// The workspace to flush into: the one the session records; a -w that names
/// another directory is refused.
Result<std::string> chooseWorkspace(const std::string& given, const std::string& session) {
  std::string recorded = session.empty() ? "" : recordedWorkspace(session);
  if (recorded.empty()) {
    if (!given.empty()) return given;
    if (!session.empty() && exists(SessionLayout{session}.manifest()))
      return failWith(exit_code::kUsage,
                      "session {} does not record its workspace; pass -w DIR (the directory it "
                      "was taken from)",
                      session);
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

Result<bool> settleInterruptedFlush(const HostContext& host, const std::string& workspace, bool rollback, Ui& ui) {
  auto rec = ws::recoverFlush(
      workspace, host.dirs.state, rollback ? ws::RecoveryMode::RollBack : ws::RecoveryMode::Complete,
      ws::workspaceOwnerForFlush(workspace, host.euid), [&ui](const std::string& line) { ui.say(line); });
  if (!rec) return std::unexpected(rec.error());
  if (!rec->found) return false;
  size_t steps = rollback ? rec->undone : rec->applied;
  ui.say(fmt::format("an interrupted flush from {} was {} ({} steps)", rec->sessionDir,
                     rollback ? "rolled back" : "completed", steps));
  for (const auto& n : rec->notes) ui.say("  left alone: " + n);
  appendSessionLog(rec->sessionDir,
                   fmt::format("interrupted flush {} ({} steps)", rollback ? "rolled back" : "completed", steps));
  ws::removeStaleStaging(rec->sessionDir);
  return true;
}

Result<std::optional<ws::GatePreview>> previewSession(const HostContext& host, const PreviewRequest& request, Ui& ui) {
  auto dir = resolveSessionDir(host.dirs.state, request.session);
  if (!dir) return std::unexpected(dir.error());
  SessionLayout layout{*dir};
  ws::removeStaleStaging(*dir);  // what an interrupted diff or review left
  const std::string name = sessionName(*dir).empty() ? request.session : sessionName(*dir);
  std::string workspace = recordedWorkspace(*dir);
  if (workspace.empty() || !exists(layout.manifest()))
    return failWith(exit_code::kUsage, "session {} has no snapshot of a workspace to compare with", request.session);
  ws::GateRequest gate;
  gate.workspace = workspace;
  gate.session = *dir;
  gate.snapshot = layout.snapshot();
  gate.changeSet = request.changeSet;
  gate.changeSetFd = request.changeSetFd;
  if (gate.changeSet.empty()) {
    gate.changeSet = heldChangeSet(layout);
    if (gate.changeSet.empty() && !exists(layout.reviewed()) && exists(layout.meta()))
      return failWith(exit_code::kUsage,
                      "session {} holds no changes: it ended before its agent's changes were "
                      "exported (its process died); `airlock rm {}` removes it",
                      name, name);
    if (gate.changeSet.empty()) return std::optional<ws::GatePreview>{};
  }
  gate.maxDiffBytes = request.maxDiffBytes;
  gate.umask = host.umask;
  std::string saved;
  if (auto text = readFile(layout.ignore(), 1 << 20)) saved = *text;
  auto rules = ws::loadReviewRules(workspace, saved, request.excludes);
  if (!rules) return std::unexpected(rules.error());
  for (const auto& w : rules->warnings) ui.warn(w);
  auto baseline = ws::Manifest::load(layout.manifest());
  if (!baseline) return std::unexpected(baseline.error());
  auto preview = ws::previewGate(gate, *baseline, rules->rules, request.patches, request.color);
  if (!preview) return std::unexpected(preview.error());
  return std::optional<ws::GatePreview>(std::move(*preview));
}

Result<ReviewResult> reviewSession(const HostContext& host, const ReviewRequest& request, Ui& ui) {
  ReviewRequest a = request;
  ReviewResult out;
  if (!a.session.empty()) {
    auto dir = resolveSessionDir(host.dirs.state, a.session);
    if (!dir) return std::unexpected(dir.error());
    a.session = *dir;
  }
  Fd reviewLock;  // held until the review returns
  if (!a.session.empty()) {
    auto lock = lockForReview(a.session);
    if (!lock) return std::unexpected(lock.error());
    reviewLock = std::move(*lock);
  }
  auto workspace = chooseWorkspace(a.workspace, a.session);
  if (!workspace) return std::unexpected(workspace.error());
  a.workspace = *workspace;
  out.workspace = a.workspace;
  out.session = a.session;

  // An interrupted flush into this workspace is settled first.
  auto settled = settleInterruptedFlush(host, a.workspace, a.rollbackInterrupted, ui);
  if (!settled) return std::unexpected(settled.error());
  if (!a.session.empty()) ws::removeStaleStaging(a.session);

  // A session alone reviews what it still holds: what an earlier review
  // kept, else the change set of a run whose review never finished (killed
  // at the prompt, terminal closed).
  SessionLayout layout{a.session};
  if (a.changeSet.empty() && a.after.empty() && !a.session.empty()) {
    bool reviewed = exists(layout.reviewed());
    a.changeSet = heldChangeSet(layout);
    if (a.changeSet.empty() && (reviewed || *settled)) return out;  // nothing pending
    if (a.changeSet.empty() && exists(layout.manifest()) && exists(layout.meta()))
      return failWith(exit_code::kUsage,
                      "session {} holds no changes to review: it ended before its agent's changes "
                      "were exported (its process died); `airlock rm {}` removes it",
                      request.session, request.session);
  }
  ws::GateRequest gate;
  gate.workspace = a.workspace;
  gate.snapshot = a.session.empty() ? "" : layout.snapshot();
  gate.changeSet = a.changeSet;
  gate.changeSetFd = a.changeSetFd;
  gate.after = a.after;
  gate.stateDir = host.dirs.state;
  gate.mode = a.mode;
  gate.modeName = a.modeName;
  gate.gitImport = a.gitImport;
  if (!a.session.empty() && !sessionName(a.session).empty())
    gate.gitRefPrefix = "refs/airlock/" + sessionName(a.session) + "/";
  gate.maxDiffBytes = a.maxDiffBytes;
  gate.umask = host.umask;
  gate.owner = ws::workspaceOwnerForFlush(a.workspace, host.euid);
  gate.waiting = [&ui](const std::string& line) { ui.say(line); };
  ws::ReviewTerminal* term = a.mode == ws::ReviewMode::Interactive ? ui.reviewTerminal() : nullptr;
  gate.session = "(not yet created)";  // checked before a review-XXXXXX session is made for it
  if (auto r = ws::checkGateRequest(gate, term); !r) return std::unexpected(r.error());

  // The session: a review without one gets a review-XXXXXX session, whose
  // pending changes resume into this workspace from anywhere.
  gate.session = a.session;
  if (gate.session.empty()) {
    std::string sessions = sessionsDir(host.dirs.state);
    if (auto r = makeDirs(sessions, 0700); !r) return std::unexpected(r.error());
    std::string tmpl = sessions + "/review-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      return failWith(exit_code::kInternal, "cannot create a session directory under {}: {}", sessions,
                      errnoText(errno));
    gate.session = tmpl;
    auto lock = lockForReview(gate.session);
    if (!lock) return std::unexpected(lock.error());
    reviewLock = std::move(*lock);
    if (auto r = recordWorkspace(gate.session, a.workspace); !r) return std::unexpected(r.error());
  }
  out.session = gate.session;

  // Rules and baseline. A session of a review without one (review-XXXXXX)
  // has no manifest at first: its baseline is the workspace as it is now,
  // saved as the session's manifest for later reviews of it.
  std::string saved;
  if (!a.session.empty())
    if (auto text = readFile(layout.ignore(), 1 << 20)) saved = *text;
  auto rules = ws::loadReviewRules(a.workspace, saved, a.excludes);
  if (!rules) return std::unexpected(rules.error());
  for (const auto& w : rules->warnings) ui.warn(w);
  bool sessionManifest = !a.session.empty() && exists(layout.manifest());
  std::string manifestFile = !a.baseline.empty() ? a.baseline : sessionManifest ? layout.manifest() : "";
  ws::Manifest baseline;
  if (!manifestFile.empty()) {
    auto m = ws::Manifest::load(manifestFile);
    if (!m) return std::unexpected(m.error());
    baseline = std::move(*m);
  } else {
    ui.warn(
        "no baseline manifest (no --baseline, no session snapshot): the workspace as it is now is the baseline, "
        "so host edits made during the agent's run cannot be detected");
    auto scan = ws::scanTree(a.workspace, rules->rules);
    if (!scan) return std::unexpected(scan.error());
    baseline = std::move(scan->manifest);
    // Kept for a later `review -s` of this session: what the host had when
    // these changes were first reviewed, so edits made on the host in
    // between are conflicts, not overwritten.
    if (auto r = baseline.save(SessionLayout{gate.session}.manifest()); !r) return std::unexpected(r.error());
  }

  auto outcome = ws::runGate(gate, baseline, rules->rules, term);
  if (!outcome) return std::unexpected(outcome.error());
  appendSessionLog(gate.session, outcome->summary);
  (void)writeFileAtomic(SessionLayout{gate.session}.reviewed(), outcome->summary + "\n", 0600);
  out.outcome = std::move(*outcome);
  return out;
}

}  // namespace airlock::session
