// `airlock diff NAME [--stat] [--json]`: a session's changes as its review
// would show them (the three-way diff against the snapshot's baseline and
// the live workspace), read-only. A running detached session exports its
// changes so far on request (session/supervisor.h, kDiff); an ended one
// shows what it still holds for review.

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/repeatable.h"
#include "cli/report.h"
#include "cli/review_output.h"
#include "cli/running_export.h"
#include "cli/session_flags.h"
#include "cli/terminal_ui.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "session/dead_session.h"
#include "session/layout.h"
#include "session/review_session.h"
#include "session/session.h"
#include "session/session_list.h"
#include "workspace/review.h"

namespace airlock::cli {
namespace {

/// The flags of `airlock diff`.
struct DiffArgs {
  std::string name;                   ///< session name or id
  bool stat = false;                  ///< the table only
  bool json = false;                  ///< one JSON document
  std::string color = "auto";         ///< auto (a terminal on stdout), always, never
  std::vector<std::string> excludes;  ///< extra ignore patterns
  uint64_t maxDiffBytes = 1 << 20;    ///< larger files get a summary, not a diff
};

/// Waits until the session in `dir` has ended (its run lock is free): a
/// detached session between its agent's end and its final export.
void waitForTheEnd(const std::string& dir, const std::string& name) {
  const std::string lock = session::SessionLayout{dir}.runLock();
  if (lockHeld(lock)) std::fprintf(stderr, "airlock: %s is ending; waiting for its changes\n", name.c_str());
  while (lockHeld(lock)) ::usleep(200 * 1000);
}

int runDiff(const HostContext& host, const DiffArgs& a) {
  auto dir = session::resolveSessionDir(host.dirs.state, a.name);
  if (!dir) return reportError(dir.error());
  bool running = lockHeld(session::SessionLayout{*dir}.runLock());
  Fd exported;
  if (running) {
    auto meta = session::readSessionMeta(*dir);
    if (!meta || !meta->detached)
      return reportError(Error{fmt::format("session {} runs in the foreground: its review shows its changes when it "
                                           "ends (only a detached session, run -d, shows them while it runs)",
                                           a.name),
                               exit_code::kBusy});
    if (::isatty(2)) std::fprintf(stderr, "airlock: exporting the changes of %s so far\n", a.name.c_str());
    auto file = exportRunningChanges(*dir, a.name);
    if (!file && file.error().code != exit_code::kUsage && file.error().code != exit_code::kBusy)
      return reportError(file.error());
    if (file) {
      exported = std::move(*file);
    } else {  // it is ending: its changes are exported now, or already were
      waitForTheEnd(*dir, a.name);
      running = false;
    }
  }
  const bool color = a.color == "always" || (a.color == "auto" && !a.json && ::isatty(1));
  session::PreviewRequest request;
  request.session = *dir;
  request.changeSet = exported ? "-" : "";
  request.changeSetFd = exported.get();
  request.excludes = a.excludes;
  request.maxDiffBytes = a.maxDiffBytes;
  request.patches = !a.stat && !a.json;
  request.color = color;
  TerminalUi ui(host, false);
  if (!running)
    if (auto r = session::exportDeadSession(host.dirs.state, *dir, launchMachine(host), ui); !r)
      return reportError(r.error());
  auto preview = session::previewSession(host, request, ui);
  if (!preview) return reportError(preview.error());
  const std::vector<workspace::DiffItem> none;
  const auto& items = *preview ? (*preview)->items : none;
  if (a.json) {
    nlohmann::json j = {{"session", *dir}, {"running", running}, {"items", nlohmann::json::array()}};
    if (*preview) j["already_applied"] = (*preview)->alreadyApplied;
    for (const auto& item : items) j["items"].push_back(changeItemJson(item));
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  if (items.empty()) {
    std::printf("no changes in session %s%s\n", a.name.c_str(), running ? " so far" : " to review");
    return 0;
  }
  std::printf("%s", workspace::summaryTable(items).c_str());
  if (!a.stat)
    for (const auto& patch : (*preview)->patches) std::printf("\n%s", patch.c_str());
  std::fflush(stdout);
  if (running)
    std::fprintf(stderr, "airlock: %s is still running; these are its changes so far (nothing was flushed)\n",
                 a.name.c_str());
  return 0;
}

}  // namespace

void addDiffCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* d = app.add_subcommand("diff",
                                   "Show a session's changes as its review would, while it runs or after; "
                                   "never flushes");
  d->add_option("name", args->name, "the session: its name or id (`airlock ls`)")->required();
  d->add_flag("--stat", args->stat, "the table of changed paths only");
  d->add_flag("--json", args->json, "one JSON document: the changed paths with kinds, line counts, modes, flags");
  d->add_option("--color", args->color, "auto (default: when stdout is a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  repeatable(d->add_option("--exclude", args->excludes, "extra ignore pattern (gitignore syntax); repeatable"));
  d->add_option("--max-diff-bytes", args->maxDiffBytes, "larger files get a summary instead of a diff (default 1 MiB)");
  d->callback([args, &host, &exitCode] { exitCode = runDiff(host, *args); });
}

}  // namespace airlock::cli
