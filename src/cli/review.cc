// `airlock review`: drive the review gate by hand (session/review_session.h).
//
//   airlock review NAME (or -s SESSION)       what the session still holds
//   airlock review --workspace DIR --session SESSION (--change-set LAYER.tar | --after DIR)
//       three-way diff, review (interactive, auto, all, none), crash-safe flush;
//       whatever is not flushed is kept in SESSION/pending.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/repeatable.h"
#include "cli/report.h"
#include "cli/review_output.h"
#include "cli/run_flags.h"
#include "cli/session_flags.h"
#include "cli/terminal_ui.h"
#include "common/exit_codes.h"
#include "common/file_lock.h"
#include "session/dead_session.h"
#include "session/layout.h"
#include "session/review_session.h"
#include "session/session.h"
#include "workspace/review.h"

namespace airlock::cli {
namespace {

/// The flags of `airlock review`.
struct ReviewArgs {
  std::string workspace;                   ///< "" = the session's recorded one, else "."
  std::string session;                     ///< session id, name or directory (-s)
  std::string name;                        ///< the same, as the positional NAME
  std::string baseline;                    ///< baseline manifest; default SESSION/manifest
  std::string changeSet;                   ///< OCI layer tar ("-" = stdin), or:
  std::string after;                       ///< a directory with the agent's result
  std::string mode = "interactive";        ///< interactive, auto, all, none
  std::string git = "refs-only";           ///< --git: none, refs-only, branches
  std::string onInterrupted = "complete";  ///< complete or rollback an interrupted flush
  std::vector<std::string> excludes;       ///< extra ignore patterns
  uint64_t maxDiffBytes = 1 << 20;         ///< larger files get a summary, not a diff
  bool json = false;                       ///< print the result as JSON
};

int runReview(const HostContext& host, const ReviewArgs& a) {
  auto mode = workspace::parseReviewMode(a.mode);
  if (!mode) return reportError(withCode(mode.error(), exit_code::kUsage));
  if (!a.name.empty() && !a.session.empty())
    return reportError(
        Error{"name the session once: `airlock review NAME` or `airlock review -s NAME`", exit_code::kUsage});
  const std::string& sessionArg = a.name.empty() ? a.session : a.name;
  // A session whose agent still runs has nothing final to review: its owner
  // reviews it (foreground) or keeps it for later (detached).
  if (!sessionArg.empty()) {
    auto dir = session::resolveSessionDir(host.dirs.state, sessionArg);
    if (!dir) return reportError(dir.error());
    if (lockHeld(session::SessionLayout{*dir}.runLock()))
      return reportError(Error{fmt::format("session {} is still running; review it when it has ended (airlock stop "
                                           "{} ends it)",
                                           sessionArg, sessionArg),
                               exit_code::kBusy});
    TerminalUi exportUi(host, false);
    if (a.changeSet.empty() && a.after.empty())  // what the session holds, a dead one's on its kept disk
      if (auto r = session::exportDeadSession(host.dirs.state, *dir, launchMachine(host), exportUi); !r)
        return reportError(r.error());
  }
  session::ReviewRequest request;
  request.workspace = a.workspace;
  request.session = sessionArg;
  request.baseline = a.baseline;
  request.changeSet = a.changeSet;
  request.changeSetFd = 0;  // `-c -`: standard input
  request.after = a.after;
  request.mode = *mode;
  request.gitImport = *workspace::parseGitImportMode(a.git);
  request.modeName = a.mode;
  request.rollbackInterrupted = a.onInterrupted == "rollback";
  request.excludes = a.excludes;
  request.maxDiffBytes = a.maxDiffBytes;
  TerminalUi ui(host, false);
  auto result = session::reviewSession(host, request, ui);
  if (!result) return reportError(result.error());
  if (!result->outcome) {
    std::printf("nothing pending in session %s\n", result->session.c_str());
    return 0;
  }
  if (a.json)
    printReviewJson(*result->outcome, result->session);
  else
    printReviewText(stdout, *result->outcome, result->workspace);
  printResumeHint(*result->outcome, host.dirs.state, result->session);
  return result->exitCode();
}

}  // namespace

void addReviewCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto rev = std::make_shared<ReviewArgs>();
  CLI::App* r =
      app.add_subcommand("review", "Review an agent's change set against the workspace and flush what you accept");
  r->add_option("--workspace,-w", rev->workspace,
                "the live project directory (default: the session's own workspace, else .)");
  r->add_option("name", rev->name, "the session to review: its name or id (as -s)");
  r->add_option("--session,-s", rev->session,
                "session name or id (from `airlock run`, `airlock ls`) or directory (from `airlock snapshot`); "
                "alone, it resumes the session's pending review");
  r->add_option("--baseline", rev->baseline, "baseline manifest file (default: SESSION/manifest)");
  r->add_option("--change-set,-c", rev->changeSet, "the agent's changes as an OCI layer tar ('-' = stdin)");
  r->add_option("--after", rev->after, "or: a directory holding the agent's result, compared with the snapshot");
  r->add_option(
       "--review", rev->mode,
       "interactive (default; answered on the controlling terminal), auto (all but held-back paths), all, none")
      ->check(CLI::IsMember({"interactive", "auto", "all", "none"}));
  addGitFlag(*r, rev->git);
  repeatable(r->add_option("--exclude", rev->excludes, "extra ignore pattern (gitignore syntax); repeatable"));
  r->add_option("--max-diff-bytes", rev->maxDiffBytes, "larger files get a summary instead of a diff (default 1 MiB)");
  r->add_option("--on-interrupted", rev->onInterrupted, "an interrupted earlier flush: complete (default) or rollback")
      ->check(CLI::IsMember({"complete", "rollback"}));
  r->add_flag("--json", rev->json, "machine-readable output (implies no pager)");
  r->callback([rev, &host, &exitCode] { exitCode = runReview(host, *rev); });
}

}  // namespace airlock::cli
