#pragma once
// What airlock's MCP proxy (mcp/host_proxy.h) forwards the guest's allowed
// requests to: a stdio server it runs on the host (stdio_server.h) or a
// remote streamable-HTTP server it reaches from the host with a token the
// guest never sees (remote_server.h).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace airlock::mcp {

/// The deepest JSON nesting the proxy takes from a guest or a server
/// (common/encoding.h jsonDepth()): MCP's messages are shallow.
inline constexpr size_t kMaxMessageDepth = 64;

class Upstream {
 public:
  virtual ~Upstream() = default;
  /// The first request, `initialize`, made when the run starts (before the
  /// jail's user namespace: it leaves no thread running). The response
  /// object, with "result" or "error"; errors: the server is unreachable,
  /// gone, or did not answer within `timeout`.
  virtual Result<nlohmann::json> initialize(const nlohmann::json& params, std::chrono::milliseconds timeout) = 0;
  /// Sends request `method` with `params` (an object, or null for none) and
  /// returns the response object, as initialize(). Thread-safe.
  virtual Result<nlohmann::json> request(const std::string& method, const nlohmann::json& params,
                                         std::chrono::milliseconds timeout) = 0;
  /// Sends notification `method`. Thread-safe.
  virtual Result<> notify(const std::string& method, const nlohmann::json& params) = 0;
  /// Ends it (a process stopped, a remote session ended); requests in flight
  /// fail soon. Idempotent, thread-safe.
  virtual void stop() = 0;
  /// The server's process, -1 for a remote one.
  virtual pid_t pid() const { return -1; }
};

}  // namespace airlock::mcp
