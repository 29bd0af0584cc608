#pragma once
// Everything a verb needs to know about the run it is about to describe or
// start: the user config, the agent (built-in or custom), the repo config of
// the workspace, and the merged settings.

#include <optional>
#include <string>

#include "agents/agent_spec.h"
#include "agents/registry.h"
#include "common/error.h"
#include "config/merge.h"

namespace airlock::config {

/// The effective configuration of one run.
struct EffectiveConfig {
  agents::AgentSpec agent;
  std::string workspace;  ///< the workspace's real path
  ConfigSources sources;
  Resolved resolved;
};

/// The built-in agents plus the custom agents of `user`; a custom agent
/// named like a built-in takes its place. Fails (kUsage) when two custom
/// agents share a name.
Result<agents::AgentRegistry> registryWithCustomAgents(const std::optional<ConfigLayer>& user,
                                                       const std::string& userPath);

/// Puts the npm packages of `settings`' MCP servers into `agent`'s image
/// recipe (agents/mcp.h: the image is built with them), when the agent
/// takes MCP servers (a non-empty mcp.file); otherwise a no-op.
void applyMcpPackages(agents::AgentSpec& agent, const Settings& settings);

/// Loads the user config at `userPath` (userConfigPath()), finds
/// `agentName`, loads the repo config of `workspace` and resolves them with
/// `flags`; the agent's image recipe gets the MCP servers' packages
/// (applyMcpPackages). Errors carry exit_code::kUsage and name the file or agent.
Result<EffectiveConfig> loadEffectiveConfig(const std::string& userPath, const std::string& agentName,
                                            const std::string& workspace, const ConfigLayer& flags);

}  // namespace airlock::config
