#include "agents/mcp.h"

#include <nlohmann/json.hpp>

#include "common/exit_codes.h"

namespace airlock::agents {

bool isMcpServerName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front())) return false;
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '_') return false;
  return true;
}

Result<std::pair<std::string, std::string>> parseNpmPin(std::string_view text) {
  auto bad = [&] {
    return failWith(exit_code::kUsage,
                    "'{}' is not PACKAGE@VERSION with an exact version (e.g. "
                    "\"@modelcontextprotocol/server-filesystem@2026.8.31\")",
                    text);
  };
  const size_t at = text.rfind('@');
  if (at == std::string_view::npos || at == 0) return bad();
  std::string_view package = text.substr(0, at), version = text.substr(at + 1);
  // npm's names: lower case, URL-safe, an optional @scope/ prefix.
  auto nameChar = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  };
  std::string_view bare = package;
  if (bare.starts_with('@')) {
    const size_t slash = bare.find('/');
    if (slash == std::string_view::npos || slash == 1) return bad();
    for (char c : bare.substr(1, slash - 1))
      if (!nameChar(c)) return bad();
    bare = bare.substr(slash + 1);
  }
  if (bare.empty() || bare.front() == '.' || bare.front() == '_') return bad();
  for (char c : bare)
    if (!nameChar(c)) return bad();
  // An exact semver: MAJOR.MINOR.PATCH, then -pre.release or +build of [0-9A-Za-z.-].
  size_t dots = 0, i = 0;
  for (; i < version.size() && version[i] != '-' && version[i] != '+'; ++i) {
    if (version[i] == '.')
      ++dots;
    else if (version[i] < '0' || version[i] > '9')
      return bad();
  }
  if (dots != 2 || version.empty() || version.front() == '.' || version.find("..") != std::string_view::npos ||
      version[i - 1] == '.')
    return bad();
  for (; i < version.size(); ++i) {
    char c = version[i];
    bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == '+';
    if (!ok) return bad();
  }
  return std::pair{std::string(package), std::string(version)};
}

std::string mcpWrapperPath(const std::string& name) { return "/usr/local/bin/mcp-" + name; }

std::vector<std::string> mcpServerArgv(const McpServer& server) {
  std::vector<std::string> argv;
  if (!server.npmPackage.empty())
    argv.push_back(mcpWrapperPath(server.name));
  else
    argv = server.command;
  argv.insert(argv.end(), server.args.begin(), server.args.end());
  return argv;
}

Result<std::string> withMcpServers(const std::string& existing, const std::vector<McpServer>& servers) {
  nlohmann::json doc = nlohmann::json::object();
  if (!existing.empty()) {
    doc = nlohmann::json::parse(existing, nullptr, false);
    if (!doc.is_object()) return failWith(exit_code::kUsage, "the agent's MCP configuration file is not a JSON object");
  }
  nlohmann::json& table = doc["mcpServers"];
  if (!table.is_object()) table = nlohmann::json::object();
  for (const auto& server : servers) {
    const auto argv = mcpServerArgv(server);
    nlohmann::json entry = {{"command", argv.front()},
                            {"args", std::vector<std::string>(argv.begin() + 1, argv.end())}};
    if (!server.env.empty()) entry["env"] = server.env;
    table[server.name] = std::move(entry);
  }
  return doc.dump(2) + "\n";
}

}  // namespace airlock::agents
