#include "cli/agent_home.h"

#include <algorithm>

#include "cli/session_flags.h"
#include "vm/guest_contract.h"

namespace airlock::cli {

agents::AgentSpec withConfigForwards(agents::AgentSpec spec, const config::Settings& settings) {
  for (const auto& name : settings.envForward)
    if (name.layer == config::Layer::kUser) spec.envForward.push_back(name.value);
  return spec;
}

Result<agents::EnvMap> agentEnvironment(const HostContext& host, const agents::AgentSpec& spec,
                                        const std::vector<std::string>& extra, bool pty) {
  agents::EnvMap env = {{"PATH", guest::kDefaultPath},
                        {"HOME", guest::kAgentHome},
                        {"USER", "agent"},
                        {"LOGNAME", "agent"},
                        {"LANG", "C.UTF-8"}};
  if (pty) env["TERM"] = host.terminal.term.empty() ? "xterm-256color" : host.terminal.term;
  for (const auto& [k, v] : spec.env) env[k] = v;
  for (const auto& [k, v] : agents::forwardedEnv(spec, host.env)) env[k] = v;
  auto flags = envFlags(host, extra, "--env");
  if (!flags) return std::unexpected(flags.error());
  for (const auto& [k, v] : *flags) env[k] = v;
  return env;
}

UserSettings importUserSettings(const HostContext& host, const agents::AgentSpec& spec,
                                const config::Settings& settings, const agents::EnvMap& env,
                                std::vector<session::HomeFile>& homeFiles,
                                const std::vector<session::HomeFile>& seedFiles) {
  UserSettings out;
  if (!settings.settingsImport.value || spec.settings.empty()) return out;
  // The agent's own variables, and TERM whether or not this run has a pty.
  std::vector<std::string> owned = spec.envForward;
  owned.emplace_back("TERM");
  for (const auto& [name, value] : env) owned.push_back(name);
  // airlock's own directories (secrets, sessions, states) never go in, whatever links there.
  const std::vector<std::string> airlockDirs = {host.dirs.data, host.dirs.state, host.dirs.config, host.dirs.cache};
  out.imported = state::importSettings(host.dirs.home, spec.settings, owned, airlockDirs);
  session::SettingsPlan plan;
  for (const auto& s : spec.settings) plan.paths.push_back(s.path);
  for (auto& entry : out.imported.entries) {
    auto seed = std::find_if(seedFiles.begin(), seedFiles.end(),
                             [&](const session::HomeFile& f) { return f.path == entry.path; });
    if (seed != seedFiles.end() && !entry.directory) {
      if (auto merged = state::mergeJsonObjects(seed->content, entry.content)) entry.content = std::move(*merged);
    }
    auto home = std::find_if(homeFiles.begin(), homeFiles.end(),
                             [&](const session::HomeFile& f) { return f.path == entry.path; });
    if (home == homeFiles.end() || entry.directory) {
      plan.entries.push_back(std::move(entry));
      continue;
    }
    auto merged = state::mergeJsonObjects(entry.content, home->content);
    if (merged)
      home->content = std::move(*merged);
    else
      out.imported.dropped.push_back("~/" + entry.path + ": " + merged.error().message);
  }
  out.imported.entries.clear();
  out.plan = std::move(plan);
  return out;
}

}  // namespace airlock::cli
