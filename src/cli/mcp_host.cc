#include "cli/mcp_host.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli/host_secrets.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/subprocess.h"

namespace airlock::cli {

std::vector<std::string> hostMcpEnvironment(const HostContext& host, const agents::McpServer& server) {
  std::map<std::string, std::string> env;
  for (const char* name : {"HOME", "USER", "LOGNAME", "PATH", "SHELL", "LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR"})
    if (auto it = host.env.find(name); it != host.env.end()) env[name] = it->second;
  if (!env.contains("HOME")) env["HOME"] = host.dirs.home;
  for (const auto& [name, value] : server.env) env[name] = value;
  std::vector<std::string> out;
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

Result<std::shared_ptr<mcp::HostMcpProxy>> startHostMcpServers(const HostContext& host,
                                                               const std::vector<agents::McpServer>& servers,
                                                               const std::string& cwd, session::Plan& plan) {
  if (servers.empty()) return nullptr;
  if (plan.machine.egress)
    for (const auto& mapping : plan.machine.egress->hostPorts)
      if (mapping.guestPort == mcp::kMcpProxyPort)
        return failWith(
            exit_code::kUsage,
            "--host-port {} takes the gateway port of airlock's MCP proxy (host: true and url: servers); map "
            "another port, or run with --no-mcp",
            mapping.guestPort);
  const std::string logDir = host.dirs.state + "/mcp";
  if (auto r = makeDirs(logDir, 0700); !r) return std::unexpected(r.error());
  std::vector<mcp::HostServerConfig> configs;
  for (const auto& server : servers) {
    mcp::HostServerConfig config;
    config.name = server.name;
    config.tools.insert(server.tools.begin(), server.tools.end());
    if (!server.url.empty()) {
      mcp::RemoteServerOptions remote;
      remote.url = server.url;
      remote.caFile = host.getEnv("SSL_CERT_FILE");
      if (!server.token.empty()) {
        auto token = readTokenSource(host, server.token, fmt::format("MCP server {}: token", server.name));
        if (!token) return std::unexpected(token.error());
        remote.token = std::move(*token);
      }
      config.remote = std::move(remote);
      configs.push_back(std::move(config));
      continue;
    }
    const std::string program = server.command.front();
    config.process.argv = server.command;
    config.process.argv.front() = findProgram(program);
    if (config.process.argv.front().empty())
      return failWith(exit_code::kUsage, "MCP server {} (on the host): {} is not found on your PATH", server.name,
                      program);
    config.process.argv.insert(config.process.argv.end(), server.args.begin(), server.args.end());
    config.process.environment = hostMcpEnvironment(host, server);
    config.process.cwd = cwd;
    config.process.stderrPath = logDir + "/" + server.name + ".log";
    configs.push_back(std::move(config));
  }
  auto proxy = mcp::HostMcpProxy::start(std::move(configs));
  if (!proxy) {
    const bool onHost = std::any_of(servers.begin(), servers.end(), [](const auto& s) { return s.host; });
    if (!onHost) return std::unexpected(proxy.error());
    return failWith(proxy.error().code, "{} (a host server's stderr: {}/NAME.log)", proxy.error().message, logDir);
  }
  plan.machine.egressNetwork.gatewayServices[mcp::kMcpProxyPort] =
      [proxy = *proxy](Fd guest, const egress::EgressLogFn&, const egress::EgressLogFn& sessionLog) {
        proxy->serve(std::move(guest), sessionLog);
      };
  return *proxy;
}

}  // namespace airlock::cli
