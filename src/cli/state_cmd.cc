// `airlock state ls|rm`: the agents' state kept per project between runs
// (issue 16): conversations, prompt history, the agent's own settings.

#include <fcntl.h>
#include <sys/file.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/report.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "session/session.h"
#include "state/state_store.h"

namespace airlock::cli {
namespace {

int listStates(const HostContext& host, const std::string& agent, bool json) {
  auto states = state::listStates(host.dirs.data, agent);
  if (!states) return reportError(states.error());
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : *states)
      out.push_back({{"agent", s.agent}, {"project", s.project}, {"dir", s.dir}, {"bytes", s.bytes},
                     {"last_used_at", formatUtcTime(std::chrono::system_clock::to_time_t(s.lastUsed))}});
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  if (states->empty()) {
    std::fprintf(stderr, "airlock: no saved agent state%s\n", agent.empty() ? "" : (" for " + agent).c_str());
    return 0;
  }
  std::printf("%-12s %-10s %-20s %s\n", "AGENT", "SIZE", "LAST USED", "PROJECT");
  for (const auto& s : *states)
    std::printf("%-12s %-10s %-20s %s\n", s.agent.c_str(), formatBytes(s.bytes).c_str(), formatUtcTime(std::chrono::system_clock::to_time_t(s.lastUsed)).c_str(),
                s.project.empty() ? "(unknown)" : s.project.c_str());
  return 0;
}

/// The workspace lock of `project` taken without waiting, held while its
/// state is removed (a running session saves it when its agent exits);
/// kBusy when a session runs there.
Result<Fd> lockProject(const HostContext& host, const std::string& project) {
  if (auto r = makeDirs(host.dirs.state + "/locks", 0700); !r) return std::unexpected(r.error());
  const std::string path = session::lockPathFor(host.dirs.state, project);
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fail("cannot open {}: {}", path, errnoText(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return failWith(exit_code::kBusy, "a session is running on {}; remove its state after it ends", project);
  return fd;
}

int removeStates(const HostContext& host, const std::string& agent, const std::string& workspace, bool all) {
  if (all && !workspace.empty())
    return reportError(Error{"give -w DIR (one project's state) or --all (every project's), not both",
                             exit_code::kUsage});
  if (!all && workspace.empty())
    return reportError(Error{"name the project with -w DIR, or remove every project's state with --all",
                             exit_code::kUsage});
  const std::string project = all ? std::string() : resolvedPath(workspace);
  std::vector<state::SavedState> states;
  if (all) {
    auto listed = state::listStates(host.dirs.data, agent);
    if (!listed) return reportError(listed.error());
    states = std::move(*listed);
  } else if (auto one = state::findState(host.dirs.data, agent, project)) {
    states.push_back(std::move(*one));
  }
  size_t removed = 0;
  for (const auto& s : states) {
    std::optional<Fd> lock;
    if (!s.project.empty()) {
      auto held = lockProject(host, s.project);
      if (!held) return reportError(held.error());
      lock = std::move(*held);
    }
    if (auto r = removeTree(s.dir); !r) return reportError(r.error());
    std::fprintf(stderr, "airlock: removed %s's state for %s\n", s.agent.c_str(),
                 s.project.empty() ? s.dir.c_str() : s.project.c_str());
    ++removed;
  }
  if (removed == 0 && !all)
    return reportError(Error{fmt::format("no saved {} state for {}", agent, project), exit_code::kUsage});
  return 0;
}

}  // namespace

void addStateCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto* cmd = app.add_subcommand("state", "The agents' state kept per project between runs (conversations, history)");
  cmd->require_subcommand(1);
  cmd->footer(R"(When an agent exits, airlock saves the agent's own state directories (its
conversations, prompt history, project entries: Claude Code's ~/.claude and
~/.claude.json, Codex's ~/.codex, Gemini CLI's ~/.gemini, OpenCode's
~/.local/share/opencode) from the VM, per agent and per project, under
$XDG_DATA_HOME/airlock/state, and puts them back at the next run on the same
project, so `claude --continue` resumes there and nowhere else. Never saved:
credentials (a login made in the VM stays there) and your own settings copied
in from the host (they go in afresh each run). What comes out of the VM is
kept as plain data: files, directories and symlinks that stay inside; never
devices or setuid bits; at most 256 MiB. `airlock run --fresh` starts without
it once and leaves it as it is. See README "Agent state and settings".

Examples:
  airlock state ls
  airlock state ls claude-code --json
  airlock state rm claude-code -w ~/src/app
  airlock state rm codex --all)");
  auto ls = cmd->add_subcommand("ls", "List saved states: agent, size, last use, project");
  auto lsAgent = std::make_shared<std::string>();
  auto lsJson = std::make_shared<bool>(false);
  ls->add_option("agent", *lsAgent, "Only this agent's");
  ls->add_flag("--json", *lsJson, "Machine-readable output");
  ls->callback([&exitCode, &host, lsAgent, lsJson] { exitCode = listStates(host, *lsAgent, *lsJson); });
  auto rm = cmd->add_subcommand("rm", "Remove an agent's saved state for one project (-w) or all (--all)");
  auto rmAgent = std::make_shared<std::string>();
  auto rmWorkspace = std::make_shared<std::string>();
  auto rmAll = std::make_shared<bool>(false);
  rm->add_option("agent", *rmAgent, "The agent")->required()->check([](const std::string& name) {
    bool ok = !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") == std::string::npos;
    return ok ? std::string() : "not an agent name: " + name;
  });
  rm->add_option("-w,--workspace", *rmWorkspace, "The project directory");
  rm->add_flag("--all", *rmAll, "Every project's state of this agent");
  rm->callback([&exitCode, &host, rmAgent, rmWorkspace, rmAll] {
    exitCode = removeStates(host, *rmAgent, *rmWorkspace, *rmAll);
  });
}

}  // namespace airlock::cli
