// `airlock ls`, `airlock stop`, `airlock rm`: the sessions on this host,
// found in the state directory (session/session_list.h); no daemon.

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/report.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "session/layout.h"
#include "session/session.h"
#include "session/session_list.h"

namespace airlock::cli {
namespace {

using session::SessionLayout;

/// "12s", "5m", "3h", "2d" since `created` (Unix seconds).
std::string age(int64_t created) {
  int64_t s = std::max<int64_t>(0, std::time(nullptr) - created);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m", s / 60);
  if (s < 86400) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

std::string mib(uint64_t bytes) { return bytes ? fmt::format("{} MiB", (bytes + (1 << 19)) >> 20) : "-"; }

int listSessions(const HostContext& host, bool all, bool json, bool quiet) {
  std::vector<session::SessionEntry> shown;
  for (auto& e : session::listSessions(host.dirs.state))
    if (all || e.state != session::SessionState::kExited) shown.push_back(std::move(e));
  if (json) {
    auto out = nlohmann::json::array();
    for (const auto& e : shown) {
      nlohmann::json j = {{"name", e.name},
                          {"id", e.id},
                          {"dir", e.dir},
                          {"workspace", e.workspace},
                          {"state", session::stateText(e)},
                          {"host_memory_bytes", e.hostMemoryBytes}};
      j["exit_code"] = e.exitCode ? nlohmann::json(*e.exitCode) : nlohmann::json(nullptr);
      if (e.meta) {
        j["agent"] = e.meta->label;
        j["created"] = e.meta->created;
        j["cpus"] = e.meta->cpus;
        j["memory_mib"] = e.meta->memoryMiB;
        j["detached"] = e.meta->detached;
      }
      out.push_back(std::move(j));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (quiet) {
    for (const auto& e : shown) std::printf("%s\n", (e.name.empty() ? e.id : e.name).c_str());
    return 0;
  }
  std::printf("%-24s %-12s %-16s %-5s %-5s %-10s %-9s %s\n", "NAME", "AGENT", "STATE", "AGE", "CPUS", "MEMORY",
              "HOST MEM", "WORKSPACE");
  for (const auto& e : shown) {
    const auto& m = e.meta;
    std::printf("%-24s %-12s %-16s %-5s %-5s %-10s %-9s %s\n", (e.name.empty() ? e.id : e.name).c_str(),
                m ? m->label.c_str() : "-", session::stateText(e).c_str(), m ? age(m->created).c_str() : "-",
                m ? std::to_string(m->cpus).c_str() : "-", m ? fmt::format("{} MiB", m->memoryMiB).c_str() : "-",
                mib(e.hostMemoryBytes).c_str(), e.workspace.c_str());
  }
  return 0;
}

/// Waits up to `limit` for the owner of the session in `dir` to let go of
/// its run lock (a review started right after does not count).
bool waitStopped(const std::string& dir, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (lockHeld(SessionLayout{dir}.runLock())) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

int stopSessions(const HostContext& host, const std::vector<std::string>& names, int seconds) {
  int code = 0;
  for (const auto& name : names) {
    auto dir = session::resolveSessionDir(host.dirs.state, name);
    if (!dir) {
      code = reportError(dir.error());
      continue;
    }
    SessionLayout layout{*dir};
    auto meta = session::readSessionMeta(*dir);
    // SIGTERM to the session's owner reaches the command; a second one
    // after `seconds` ends it as the escape keys do. Either way its changes
    // are exported before the VM stops. Not running: nothing to stop (docker
    // stop says the name all the same).
    if (!meta || !session::signalSessionOwner(*dir, *meta, SIGTERM)) {
      std::printf("%s\n", name.c_str());
      continue;
    }
    if (!waitStopped(*dir, std::chrono::seconds(seconds))) {
      session::signalSessionOwner(*dir, *meta, SIGTERM);
      if (!waitStopped(*dir, std::chrono::seconds(120))) {
        code = reportError(Error{fmt::format("session {} did not stop within {} s; its process is {} (see {})", name,
                                             seconds + 120, meta->owner, layout.log()),
                                 exit_code::kInternal});
        continue;
      }
    }
    std::printf("%s\n", name.c_str());
  }
  return code;
}

/// Removes one session: refused while it runs or is reviewed (kBusy), and
/// while it holds unreviewed changes unless `force` (kUsage). Its run and
/// review locks are held while it goes, so nothing starts using it meanwhile.
Result<> removeSession(const HostContext& host, const std::string& dir, const std::string& name, bool force) {
  SessionLayout layout{dir};
  Fd run(::open(layout.runLock().c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  Fd review(::open(layout.reviewLock().c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!run || !review) return fail("cannot open the locks of session {}: {}", name, errnoText(errno));
  if (::flock(run.get(), LOCK_EX | LOCK_NB) != 0)
    return failWith(exit_code::kBusy, "session {} is running; stop it first (airlock stop {})", name, name);
  if (::flock(review.get(), LOCK_EX | LOCK_NB) != 0)
    return failWith(exit_code::kBusy, "session {} is being reviewed; finish that review first", name);
  if (!force && session::sessionHasPending(dir))
    return failWith(exit_code::kUsage, "session {} has changes nobody reviewed; review them (airlock review {}) or "
                    "discard them with airlock rm --force {}", name, name, name);
  session::releaseSessionName(host.dirs.state, dir);
  return removeTree(dir);
}

int removeSessions(const HostContext& host, std::vector<std::string> names, bool all, bool force) {
  if (all == !names.empty())
    return reportError(Error{"name the sessions to remove, or pass --all (every session that is not running)",
                             exit_code::kUsage});
  int code = 0;
  if (all) {
    for (const auto& e : session::listSessions(host.dirs.state)) {
      if (e.state == session::SessionState::kRunning || e.state == session::SessionState::kReviewing) continue;
      if (!force && e.state == session::SessionState::kPendingReview) {
        std::fprintf(stderr, "airlock: kept %s: it has changes nobody accepted or rejected (rm --all --force "
                             "discards them)\n",
                     (e.name.empty() ? e.id : e.name).c_str());
        continue;
      }
      names.push_back(e.name.empty() ? e.id : e.name);
    }
  }
  for (const auto& name : names) {
    auto dir = session::resolveSessionDir(host.dirs.state, name);
    if (!dir) {
      code = reportError(dir.error());
      continue;
    }
    if (auto r = removeSession(host, *dir, name, force); !r) {
      code = reportError(r.error());
      continue;
    }
    std::printf("%s\n", name.c_str());
  }
  return code;
}

}  // namespace

void addSessionCommands(CLI::App& app, int& exitCode, const HostContext& host,
                        const std::vector<std::string>& afterDoubleDash) {
  struct LsArgs {
    bool all = false, json = false, quiet = false;
  };
  auto ls = std::make_shared<LsArgs>();
  auto* lsCmd = app.add_subcommand("ls", "List sessions: running, pending review, dead (--all: also finished ones)");
  lsCmd->alias("ps");
  lsCmd->footer(R"(States: running; reviewing; pending review (ended, with changes for `airlock review NAME`);
exited (N) (ended, nothing pending; shown with --all); dead (its process died before
the command exited, e.g. SIGKILL, and nothing of it was kept: `airlock rm NAME` removes
it). A detached session's killed process leaves its VM's disk, and it is `pending
review`: the review (or `airlock diff`) exports its changes from that disk. HOST MEM is the resident memory of the session's
processes (QEMU included).)");
  lsCmd->add_flag("-a,--all", ls->all, "Also list sessions that ended with nothing pending");
  lsCmd->add_flag("--json", ls->json, "Print a JSON array");
  lsCmd->add_flag("-q,--quiet", ls->quiet, "Print only the names");
  lsCmd->callback([ls, &host, &exitCode] { exitCode = listSessions(host, ls->all, ls->json, ls->quiet); });

  struct StopArgs {
    std::vector<std::string> names;
    int seconds = 10;
  };
  auto stop = std::make_shared<StopArgs>();
  auto* stopCmd = app.add_subcommand("stop", "Stop running sessions: the agent gets SIGTERM, its changes are kept");
  stopCmd->footer(R"(The agent gets SIGTERM; after --time seconds (default 10) it is ended as Ctrl-] Ctrl-]
ends a session. Either way its changes are exported and kept: `airlock review NAME`.)");
  stopCmd->add_option("name", stop->names, "Session names or ids")->required();
  stopCmd->add_option("-t,--time", stop->seconds, "Seconds to wait for the agent to exit")->capture_default_str()
      ->check(CLI::Range(0, 3600));
  stopCmd->callback([stop, &host, &exitCode] { exitCode = stopSessions(host, stop->names, stop->seconds); });

  struct RmArgs {
    std::vector<std::string> names;
    bool all = false, force = false;
  };
  auto rm = std::make_shared<RmArgs>();
  auto* rmCmd = app.add_subcommand("rm", "Remove ended sessions (their snapshot, log and kept changes)");
  rmCmd->footer(R"(A running session is refused (exit 73: `airlock stop NAME` first); a session whose
changes were never reviewed is refused unless --force (exit 64).)");
  rmCmd->add_option("name", rm->names, "Session names or ids");
  rmCmd->add_flag("-a,--all", rm->all, "Every session that is not running (pending ones only with --force)");
  rmCmd->add_flag("-f,--force", rm->force, "Also discard changes nobody reviewed");
  rmCmd->callback([rm, &host, &exitCode] { exitCode = removeSessions(host, rm->names, rm->all, rm->force); });

  addAttachCommands(app, exitCode, host, afterDoubleDash);
}

}  // namespace airlock::cli
