#pragma once
// What `airlock run` gives the agent besides the workspace, shared with
// `airlock info` so that both say the same: its environment, and the
// user's own agent settings (state/settings_import.h) with the spec's home
// files they merge into.

#include <string>
#include <vector>

#include "agents/agent_env.h"
#include "agents/agent_spec.h"
#include "common/error.h"
#include "common/host_context.h"
#include "config/settings.h"
#include "session/plan.h"
#include "state/settings_import.h"

namespace airlock::cli {

/// The agent spec with the variables the user config forwards added to its own.
agents::AgentSpec withConfigForwards(agents::AgentSpec spec, const config::Settings& settings);

/// The agent's environment: base variables (PATH, HOME, USER, LOGNAME,
/// LANG; TERM with a pty), the spec's env, the variables the spec forwards,
/// then `extra` (--env NAME / NAME=VALUE). Fails on a malformed --env.
Result<agents::EnvMap> agentEnvironment(const HostContext& host, const agents::AgentSpec& spec,
                                        const std::vector<std::string>& extra, bool pty);

/// The user's settings as they go in.
struct UserSettings {
  state::ImportedSettings imported;       ///< what was found, and what was left out (one line each)
  std::optional<session::SettingsPlan> plan;  ///< none: settings_import is off (or the spec takes none)
};

/// The user's settings for `spec` from the host's $HOME (none with
/// `settings_import: false`). `env` is what the agent gets: a settings
/// file's "env" block does not get to change any of it. A JSON settings
/// file that is also one of `homeFiles` is merged under it (airlock's keys
/// win) there, instead of going in on its own; one that is also one of
/// `seedFiles` has the seed merged under it (the user's keys win).
UserSettings importUserSettings(const HostContext& host, const agents::AgentSpec& spec,
                                const config::Settings& settings, const agents::EnvMap& env,
                                std::vector<session::HomeFile>& homeFiles,
                                const std::vector<session::HomeFile>& seedFiles);

}  // namespace airlock::cli
