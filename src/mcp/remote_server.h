#pragma once
// A remote MCP server (issue 20, `url:`), reached by airlock's MCP proxy
// from the host: the guest talks to the proxy only, the token stays on the
// host, and the proxy's allowlist and log apply as for a host server.
//
// Spec: Model Context Protocol 2025-06-18, "Transports", Streamable HTTP:
// each message is a POST of one JSON-RPC message with "Accept:
// application/json, text/event-stream"; a request is answered with one
// application/json body or an SSE stream that carries the response (events
// whose data is a JSON-RPC message); a notification with 202. The
// Mcp-Session-Id the server gives at initialize is sent with every later
// message, with MCP-Protocol-Version; DELETE with it ends the session.
// Redirects are not followed (the token would go with them).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "mcp/upstream.h"

namespace airlock::mcp {

struct RemoteServerOptions {
  std::string url;                             ///< the server's endpoint (agents::isRemoteMcpUrl())
  std::string token;                           ///< sent as "Authorization: Bearer TOKEN"; "" for none
  std::string caFile;                          ///< trust these CAs (PEM) instead of the system store ("" = system)
  size_t maxMessageBytes = 16u * 1024 * 1024;  ///< a larger answer is an error
};

class RemoteServer : public Upstream {
 public:
  explicit RemoteServer(RemoteServerOptions options);
  ~RemoteServer() override;

  Result<nlohmann::json> initialize(const nlohmann::json& params, std::chrono::milliseconds timeout) override;
  Result<nlohmann::json> request(const std::string& method, const nlohmann::json& params,
                                 std::chrono::milliseconds timeout) override;
  Result<> notify(const std::string& method, const nlohmann::json& params) override;
  /// DELETEs the session (2 s at most) when the server gave one; later
  /// requests fail. Idempotent.
  void stop() override;

 private:
  struct Exchange;
  /// POSTs `message`; for a request (`id` set) the response object.
  Result<nlohmann::json> post(const nlohmann::json& message, const nlohmann::json* id,
                              std::chrono::milliseconds timeout, bool initializing);

  RemoteServerOptions options_;
  std::atomic<int64_t> nextId_{1};
  std::atomic<bool> stopped_{false};
  std::mutex mutex_;  // guards the two below
  std::string sessionId_;
  std::string protocolVersion_;
};

}  // namespace airlock::mcp
