#pragma once
// The user's MCP servers the agent reaches through airlock's MCP proxy
// (mcp/host_proxy.h) at its gateway (issue 20): those that run on the host
// (`host: true`), started for one run, and remote ones (`url:`), whose
// token is read here and stays on the host.

#include <memory>
#include <string>
#include <vector>

#include "agents/mcp.h"
#include "common/error.h"
#include "common/host_context.h"
#include "mcp/host_proxy.h"
#include "session/plan.h"

namespace airlock::cli {

/// Variables of airlock's environment a host server gets (with its `env`):
/// HOME, USER, LOGNAME, PATH, SHELL, LANG, LC_ALL, TMPDIR, XDG_RUNTIME_DIR.
/// Nothing else: airlock's environment may hold API keys.
std::vector<std::string> hostMcpEnvironment(const HostContext& host, const agents::McpServer& server);

/// Starts `servers` (McpPlan::hostServers): a host server in `cwd` (the
/// workspace), its stderr to STATE/mcp/NAME.log; a remote one initialized
/// with its token (SSL_CERT_FILE: the CAs it is checked against, else the
/// system's); and serves them to the guest at mcp::kMcpProxyPort (a
/// gateway service of `plan`). The proxy logs
/// each call to the session log; the servers stop when the returned proxy
/// is shut down or destroyed, or airlock exits. nullptr for no servers.
/// Errors (kUsage): a program not found on the PATH, a token not found, a
/// server that did not start or answer, a --host-port mapping of the
/// proxy's port.
Result<std::shared_ptr<mcp::HostMcpProxy>> startHostMcpServers(const HostContext& host,
                                                               const std::vector<agents::McpServer>& servers,
                                                               const std::string& cwd, session::Plan& plan);

}  // namespace airlock::cli
