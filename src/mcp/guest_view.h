#pragma once
// What the guest sees of a host MCP server through airlock's proxy
// (mcp/host_proxy.h): the answers the proxy makes itself and the filter on
// what the server says. Pure functions of JSON values.
//
// Spec: Model Context Protocol 2025-06-18: "Lifecycle" (initialize),
// "Server features / Tools" (tools/list, tools/call; an unknown tool is
// JSON-RPC error -32602), JSON-RPC 2.0 (error codes -32700, -32600, -32601).

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace airlock::mcp {

/// The protocol version the proxy asks a host server for.
inline constexpr const char* kProtocolVersion = "2025-06-18";

/// The guest's `initialize` answered by the proxy: the server's serverInfo
/// and instructions (from `server`, the server's own initialize result),
/// the tools capability only (no resources, prompts, logging or
/// completions: the proxy forwards tools only), and the protocol version
/// the guest asked for when the proxy knows it (2024-11-05, 2025-03-26,
/// 2025-06-18), else kProtocolVersion.
nlohmann::json initializeResult(const nlohmann::json& server, const nlohmann::json& guestParams);

/// A tools/list result with only the tools named in `allowed` (entries
/// without a string name are dropped too); the rest of it kept.
nlohmann::json allowedTools(nlohmann::json result, const std::set<std::string>& allowed);

/// A JSON-RPC 2.0 error response.
nlohmann::json errorResponse(const nlohmann::json& id, int code, const std::string& message);

}  // namespace airlock::mcp
