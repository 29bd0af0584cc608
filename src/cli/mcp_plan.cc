#include "cli/mcp_plan.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/exit_codes.h"
#include "egress/addresses.h"
#include "mcp/host_proxy.h"
#include "vm/guest_contract.h"

namespace airlock::cli {

std::string hostMcpUrl(const std::string& name) {
  return fmt::format("http://{}:{}{}", egress::kGatewayV4, mcp::kMcpProxyPort, mcp::endpointPath(name));
}

Result<McpPlan> planMcpServers(const config::Settings& settings, const session::ImageSource& image,
                               const agents::AgentSpec& spec, std::vector<session::HomeFile>& homeFiles) {
  McpPlan out;
  if (settings.mcpServers.empty()) return out;
  std::vector<agents::McpServer> servers;
  std::vector<std::string> names, shown, onHost;
  std::map<std::string, std::string> endpoints;
  for (const auto& s : settings.mcpServers) {
    servers.push_back(s.value);
    names.push_back(s.value.name);
    if (s.value.viaProxy()) {
      onHost.push_back(fmt::format("{} ({}; tools: {})", s.value.name, s.value.host ? "on this host" : s.value.url,
                                   fmt::join(s.value.tools, ", ")));
      endpoints[s.value.name] = hostMcpUrl(s.value.name);
      continue;
    }
    shown.push_back(s.value.npmPackage.empty()
                        ? s.value.name
                        : fmt::format("{} ({}@{})", s.value.name, s.value.npmPackage, s.value.npmVersion));
  }
  if (spec.mcp.file.empty()) {
    out.notice = fmt::format("{} takes no MCP servers from airlock; not given: {} (--no-mcp keeps this quiet)",
                             spec.name, fmt::join(names, ", "));
    return out;
  }
  for (const auto& s : servers) {
    if (s.npmPackage.empty()) continue;
    if (image.kind != session::ImageSource::Kind::kAgentBuild)
      return failWith(exit_code::kUsage,
                      "MCP server {} comes from npm, which goes into the agent's own image, but this run boots "
                      "another image; give it as command: [...] from that image, or run with --no-mcp",
                      s.name);
  }
  auto file = std::find_if(homeFiles.begin(), homeFiles.end(),
                           [&](const session::HomeFile& f) { return f.path == spec.mcp.file; });
  if (file == homeFiles.end()) file = homeFiles.insert(homeFiles.end(), {spec.mcp.file, ""});
  auto merged = agents::withMcpServers(file->content, servers, spec.mcp.format, endpoints);
  if (!merged)
    return failWith(exit_code::kUsage, "cannot add MCP servers to {}/{}: {}", guest::kAgentHome, spec.mcp.file,
                    merged.error().message);
  file->content = std::move(*merged);
  out.args = spec.mcp.args;
  if (!shown.empty()) out.line = fmt::format("MCP servers in the VM: {}", fmt::join(shown, ", "));
  if (!onHost.empty())
    out.line +=
        fmt::format("{}MCP servers through airlock's proxy: {}", out.line.empty() ? "" : "; ", fmt::join(onHost, "; "));
  for (const auto& s : servers)
    if (s.viaProxy()) out.hostServers.push_back(s);
  return out;
}

}  // namespace airlock::cli
