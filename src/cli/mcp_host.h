#pragma once
// The user's MCP servers that run on the host (`host: true`, issue 20):
// started for one run behind airlock's MCP proxy (mcp/host_proxy.h), which
// the guest reaches at its gateway.

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

/// Starts `servers` (McpPlan::hostServers) in `cwd` (the workspace) and
/// serves them to the guest at mcp::kMcpProxyPort (a gateway service of
/// `plan`). Each one's stderr goes to STATE/mcp/NAME.log. The proxy logs
/// each call to the session log; the servers stop when the returned proxy
/// is shut down or destroyed, or airlock exits. nullptr for no servers.
/// Errors (kUsage): a program not found on the PATH, a server that did not
/// start, a --host-port mapping of the proxy's port.
Result<std::shared_ptr<mcp::HostMcpProxy>> startHostMcpServers(const HostContext& host,
                                                               const std::vector<agents::McpServer>& servers,
                                                               const std::string& cwd, session::Plan& plan);

}  // namespace airlock::cli
