#include "config/effective.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/exit_codes.h"
#include "config/loader.h"

namespace airlock::config {

Result<agents::AgentRegistry> registryWithCustomAgents(const std::optional<ConfigLayer>& user,
                                                       const std::string& userPath) {
  auto registry = agents::AgentRegistry::builtin();
  if (!registry || !user) return registry;
  // The user's own agent of a built-in's name is theirs (one defined before
  // that built-in came); two of the user's own of one name are an error.
  agents::AgentRegistry own;
  for (const auto& agent : user->agents) {
    if (auto r = own.add(agent); !r)
      return failWith(exit_code::kUsage, "{}: agents: {}", userPath, r.error().message);
    registry->put(agent);
  }
  return registry;
}

void applyMcpPackages(agents::AgentSpec& agent, const Settings& settings) {
  if (agent.mcp.file.empty()) return;
  for (const auto& s : settings.mcpServers)
    if (!s.value.npmPackage.empty())
      agent.image.mcpPackages[s.value.name] = s.value.npmPackage + "@" + s.value.npmVersion;
}

Result<EffectiveConfig> loadEffectiveConfig(const std::string& userPath, const std::string& agentName,
                                            const std::string& workspace, const ConfigLayer& flags) {
  EffectiveConfig out;
  char* real = realpath(workspace.c_str(), nullptr);
  if (!real) return failWith(exit_code::kUsage, "workspace {} does not exist: {}", workspace, errnoText(errno));
  out.workspace = real;
  free(real);
  out.sources.userPath = userPath;
  auto user = loadConfigFile(out.sources.userPath);
  if (!user) return std::unexpected(user.error());
  out.sources.user = std::move(*user);
  auto registry = registryWithCustomAgents(out.sources.user, out.sources.userPath);
  if (!registry) return std::unexpected(registry.error());
  auto agent = registry->find(agentName);
  if (!agent) return std::unexpected(agent.error());
  out.agent = std::move(*agent);
  auto repo = loadRepoConfig(out.workspace, &out.sources.repoPath);
  if (!repo) return std::unexpected(repo.error());
  out.sources.repo = std::move(*repo);
  out.sources.flags = flags;
  out.resolved = resolve(out.agent, out.sources);
  if (flags.onlyMcpServers)
    for (const auto& name : *flags.onlyMcpServers) {
      const auto& kept = out.resolved.settings.mcpServers;
      if (std::none_of(kept.begin(), kept.end(), [&](const auto& s) { return s.value.name == name; }))
        return failWith(exit_code::kUsage, "--mcp {}: no MCP server of that name in this run (mcp_servers in {}{})",
                        name, userPath, out.sources.repo ? ", less remove_mcp_servers of the repo config" : "");
    }
  applyMcpPackages(out.agent, out.resolved.settings);
  return out;
}

}  // namespace airlock::config
