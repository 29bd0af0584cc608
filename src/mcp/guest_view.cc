#include "mcp/guest_view.h"

#include <array>
#include <string_view>

namespace airlock::mcp {

using nlohmann::json;

json initializeResult(const json& server, const json& guestParams) {
  static constexpr std::array<std::string_view, 3> kKnown = {"2024-11-05", "2025-03-26", "2025-06-18"};
  std::string version = kProtocolVersion;
  if (guestParams.is_object()) {
    auto asked = guestParams.find("protocolVersion");
    if (asked != guestParams.end() && asked->is_string())
      for (auto known : kKnown)
        if (asked->get<std::string>() == known) version = known;
  }
  json out = {{"protocolVersion", version}, {"capabilities", {{"tools", {{"listChanged", false}}}}}};
  json info = {{"name", "airlock-mcp-proxy"}, {"version", "1"}};
  if (server.is_object()) {
    if (auto it = server.find("serverInfo"); it != server.end() && it->is_object()) info = *it;
    if (auto it = server.find("instructions"); it != server.end() && it->is_string()) out["instructions"] = *it;
  }
  out["serverInfo"] = std::move(info);
  return out;
}

json allowedTools(json result, const std::set<std::string>& allowed) {
  if (!result.is_object()) return json{{"tools", json::array()}};
  json kept = json::array();
  if (auto tools = result.find("tools"); tools != result.end() && tools->is_array())
    for (auto& tool : *tools)
      if (tool.is_object() && tool.contains("name") && tool["name"].is_string() &&
          allowed.contains(tool["name"].get<std::string>()))
        kept.push_back(std::move(tool));
  result["tools"] = std::move(kept);
  return result;
}

json errorResponse(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

}  // namespace airlock::mcp
