#pragma once
// airlock's MCP proxy (issue 20): MCP servers the user runs on the host
// (`host: true`) or reaches on the internet (`url:`, with a token kept on
// the host), given to the guest's agent as streamable-HTTP endpoints at the
// session's gateway (http://10.0.2.2:4183/mcp/NAME), with a per-server tool
// allowlist. The guest is hostile: it reaches only the tools listed, and
// only tools at all.
//
// Per guest connection: one HTTP request (secrets/http_request.h), then the
// answer with "Connection: close".
//  - POST /mcp/NAME with one JSON-RPC message (MCP 2025-06-18,
//    "Transports", Streamable HTTP: the answer is one application/json
//    body; notifications and responses get 202):
//    - initialize and ping are answered by the proxy (guest_view.h), which
//      initialized the server itself at start;
//    - tools/list goes to the server and its answer is filtered to the
//      allowlist;
//    - tools/call of a listed tool goes to the server (name and arguments
//      only); any other is refused with JSON-RPC error -32602;
//    - every other method is refused with -32601 (resources, prompts,
//      completions, logging: a host server's files and prompts stay there).
//  - GET and DELETE: 405 (no server-initiated stream, no session to end).
//  - anything else: 404 (another path), 400 (not one JSON-RPC 2.0
//    message, a batch, JSON nested deeper than kMaxMessageDepth), 405,
//    503 (maxInFlight requests already being served).
// Every tools/call, allowed or refused, is logged with its arguments (the
// first kLoggedArgumentBytes of their JSON), and every tools/list with what
// it hid.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "mcp/remote_server.h"
#include "mcp/stdio_server.h"
#include "mcp/upstream.h"

namespace airlock::mcp {

/// The gateway port of the MCP proxy: http://10.0.2.2:4183/mcp/NAME.
inline constexpr uint16_t kMcpProxyPort = 4183;
/// The most of a call's arguments (JSON) written to the log.
inline constexpr size_t kLoggedArgumentBytes = 2000;

/// The path of a server's endpoint: "/mcp/NAME".
std::string endpointPath(const std::string& name);

/// One server behind the proxy.
struct HostServerConfig {
  std::string name;             ///< agents::isMcpServerName()
  std::set<std::string> tools;  ///< the allowlist
  StdioServerOptions process;   ///< a server run on the host (without `remote`)
  std::optional<RemoteServerOptions> remote;  ///< a remote server
};

/// Timeouts of the proxy.
struct HostProxyLimits {
  std::chrono::milliseconds start{30000};  ///< a server's initialize at start
  std::chrono::milliseconds list{30000};   ///< a tools/list
  std::chrono::milliseconds call{600000};  ///< a tools/call
  int requestTimeoutMs = 30000;            ///< the guest's request must arrive within it
  size_t maxBodyBytes = 1024 * 1024;       ///< the guest's JSON-RPC message
  unsigned maxInFlight = 16;               ///< requests served at once; more get HTTP 503
  unsigned maxLoggedRefusals = 1000;       ///< refused calls logged; then one line says the rest are not
  unsigned maxLoggedLists = 1000;          ///< tools/list lines logged
  int guestWriteTimeoutSeconds = 30;       ///< the longest an answer waits for the guest to read it
};

/// Writes one line to the session log.
using ProxyLogFn = std::function<void(const std::string&)>;

class HostMcpProxy {
 public:
  /// Starts every server and initializes it (initialize, then
  /// notifications/initialized). Call from the main thread (the servers die
  /// with it); leaves no thread running. Errors: kUsage naming the server
  /// that did not start or answer ("MCP server notes (on the host) did not
  /// start: ...", "MCP server docs (https://...) did not answer: ...").
  static Result<std::shared_ptr<HostMcpProxy>> start(std::vector<HostServerConfig> servers,
                                                     HostProxyLimits limits = {});
  ~HostMcpProxy();
  HostMcpProxy(const HostMcpProxy&) = delete;
  HostMcpProxy& operator=(const HostMcpProxy&) = delete;

  /// Serves one guest connection (see the file comment). Thread-safe.
  void serve(Fd guest, const ProxyLogFn& log) const;
  /// Stops every server (StdioServer::stop): calls in flight fail.
  /// Idempotent, thread-safe.
  void shutdown();
  /// The pid of server `name`, -1 when there is none.
  pid_t pid(const std::string& name) const;

 private:
  struct Server {
    std::string name;
    std::set<std::string> tools;
    std::unique_ptr<Upstream> process;
    nlohmann::json initialized;  ///< the server's initialize result
  };
  HostMcpProxy() = default;
  /// serve() within its slot: reads and answers one request on `fd`.
  void serveOne(int fd, const ProxyLogFn& log) const;
  /// The response to one JSON-RPC request of the guest.
  nlohmann::json answer(const Server& server, const nlohmann::json& request, const ProxyLogFn& log) const;

  std::map<std::string, Server> servers_;
  HostProxyLimits limits_;
  mutable std::atomic<unsigned> inFlight_{0};
  mutable std::atomic<unsigned> refusals_{0};
  mutable std::atomic<unsigned> lists_{0};
};

}  // namespace airlock::mcp
