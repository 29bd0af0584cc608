#pragma once
// The user's MCP servers (config `mcp_servers`, agents/mcp.h) in one run:
// which go into the agent's image, what the agent's MCP file says, the
// arguments that point the agent at it, and what the user is told.

#include <string>
#include <vector>

#include "agents/agent_spec.h"
#include "common/error.h"
#include "config/settings.h"
#include "session/plan.h"

namespace airlock::cli {

/// What the run does with the MCP servers.
struct McpPlan {
  std::vector<std::string> args;  ///< after the agent's default arguments (the spec's mcp.args; none without servers)
  std::string line;               ///< progress line for the user ("" without servers)
  std::string notice;             ///< said when servers are not given (the agent takes none from airlock)
  /// The servers given that the agent reaches through airlock's proxy
  /// (`host: true`, `url:`), for startHostMcpServers() (cli/mcp_host.h).
  std::vector<agents::McpServer> hostServers;
};

/// Where the guest reaches host server `name`: "http://10.0.2.2:4183/mcp/NAME".
std::string hostMcpUrl(const std::string& name);

/// Gives `spec`'s agent the servers of `settings` (their npm packages are
/// in its image recipe already: config::applyMcpPackages): the agent's MCP
/// file (spec.mcp.file) is written into `homeFiles`, merged into a home
/// file of that path when there is one; a host server is written as a
/// streamable-HTTP server at hostMcpUrl(). Fails (kUsage) when a
/// server comes from npm but `image` is not the agent's own built image
/// (--image, the `image` key), or the home file there is not a JSON object.
Result<McpPlan> planMcpServers(const config::Settings& settings, const session::ImageSource& image,
                               const agents::AgentSpec& spec, std::vector<session::HomeFile>& homeFiles);

}  // namespace airlock::cli
