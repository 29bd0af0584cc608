#include "agents/mcp.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/encoding.h"
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

namespace {

/// Dot-separated identifiers of [0-9A-Za-z-], none empty; `numeric`: digits
/// only. `noLeadingZero`: a numeric identifier has no leading zero.
bool identifiers(std::string_view text, bool numeric, bool noLeadingZero) {
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('.', start), text.size());
    const std::string_view id = text.substr(start, end - start);
    if (id.empty()) return false;
    bool digits = true;
    for (char c : id) {
      const bool digit = c >= '0' && c <= '9';
      digits = digits && digit;
      if (!digit && (numeric || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'))) return false;
    }
    if (noLeadingZero && digits && id.size() > 1 && id.front() == '0') return false;
    start = end + 1;
  }
  return true;
}

/// A version in semver 2.0.0's grammar: MAJOR.MINOR.PATCH without leading
/// zeros, then an optional -PRE.RELEASE and +BUILD (npm takes anything else
/// after "@" as a range or a dist-tag, which can move).
bool isExactSemver(std::string_view version) {
  std::string_view core = version, pre, build;
  if (const size_t plus = core.find('+'); plus != std::string_view::npos) {
    build = core.substr(plus + 1);
    core = core.substr(0, plus);
    if (!identifiers(build, false, false)) return false;
  }
  if (const size_t dash = core.find('-'); dash != std::string_view::npos) {
    pre = core.substr(dash + 1);
    core = core.substr(0, dash);
    if (!identifiers(pre, false, true)) return false;
  }
  return std::count(core.begin(), core.end(), '.') == 2 && identifiers(core, true, true);
}

}  // namespace

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
    if (slash == std::string_view::npos || slash == 1 || bare[1] == '.' || bare[1] == '_') return bad();
    for (char c : bare.substr(1, slash - 1))
      if (!nameChar(c)) return bad();
    bare = bare.substr(slash + 1);
  }
  if (bare.empty() || bare.front() == '.' || bare.front() == '_') return bad();
  for (char c : bare)
    if (!nameChar(c)) return bad();
  if (!isExactSemver(version)) return bad();
  return std::pair{std::string(package), std::string(version)};
}

bool isRemoteMcpUrl(std::string_view url) {
  for (unsigned char c : url)
    if (c <= 0x20 || c == 0x7f) return false;
  if (url.find('#') != std::string_view::npos) return false;
  std::string_view rest;
  const bool https = url.starts_with("https://");
  if (https)
    rest = url.substr(8);
  else if (url.starts_with("http://"))
    rest = url.substr(7);
  else
    return false;
  const std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  if (authority.empty() || authority.find('@') != std::string_view::npos) return false;
  if (https) return true;
  std::string_view hostPart = authority;
  if (hostPart.starts_with('['))
    hostPart = hostPart.substr(0, hostPart.find(']') + 1);
  else
    hostPart = hostPart.substr(0, hostPart.find(':'));
  const std::string lowered = asciiLower(hostPart);
  return lowered == "127.0.0.1" || lowered == "[::1]" || lowered == "localhost";
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

std::optional<McpFormat> parseMcpFormat(std::string_view text) {
  for (auto f :
       {McpFormat::kMcpServersJson, McpFormat::kCodexToml, McpFormat::kOpenCodeJson, McpFormat::kQwenSettingsJson})
    if (mcpFormatName(f) == text) return f;
  return std::nullopt;
}

std::string_view mcpFormatName(McpFormat format) {
  switch (format) {
    case McpFormat::kMcpServersJson:
      return "mcp-servers-json";
    case McpFormat::kCodexToml:
      return "codex-toml";
    case McpFormat::kOpenCodeJson:
      return "opencode-json";
    case McpFormat::kQwenSettingsJson:
      return "qwen-settings-json";
  }
  return "";
}

namespace {

/// A TOML basic string: quotes, backslashes and control characters escaped
/// (TOML v1.0.0, "String").
std::string tomlString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string tomlArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + tomlString(items[i]);
  return out + "]";
}

Result<std::string> withCodexTables(const std::string& existing, const std::vector<McpServer>& servers,
                                    const std::map<std::string, std::string>& endpoints) {
  std::string out = existing;
  if (!out.empty() && out.back() != '\n') out += '\n';
  for (const auto& server : servers) {
    const std::string header = "[mcp_servers." + server.name + "]";
    if (existing.find(header) != std::string::npos)
      return failWith(exit_code::kUsage, "the agent's config already has {}", header);
    if (server.viaProxy()) {  // streamable HTTP: Codex refuses stdio keys (env, command) next to url
      out += fmt::format("\n{}\nurl = {}\n", header, tomlString(endpoints.at(server.name)));
      continue;
    }
    const auto argv = mcpServerArgv(server);
    // Codex gives a server 10 s to start by default: a Node server under
    // emulation (no KVM) can take longer.
    out += fmt::format("\n{}\ncommand = {}\nargs = {}\nstartup_timeout_sec = 60\n", header, tomlString(argv.front()),
                       tomlArray(std::vector<std::string>(argv.begin() + 1, argv.end())));
    if (!server.env.empty()) {
      out += "env = {";
      bool first = true;
      for (const auto& [name, value] : server.env) {
        out += fmt::format("{}{} = {}", first ? " " : ", ", name, tomlString(value));
        first = false;
      }
      out += " }\n";
    }
  }
  return out;
}

}  // namespace

Result<std::string> withMcpServers(const std::string& existing, const std::vector<McpServer>& servers, McpFormat format,
                                   const std::map<std::string, std::string>& endpoints) {
  for (const auto& server : servers) {
    if (server.npmPackage.empty() && server.command.empty() && server.url.empty())
      return failWith(exit_code::kUsage, "MCP server {} has none of npm, command or url", server.name);
    if (server.viaProxy() && !endpoints.contains(server.name))
      return failWith(exit_code::kInternal, "MCP server {} runs on the host but has no endpoint", server.name);
  }
  if (format == McpFormat::kCodexToml) return withCodexTables(existing, servers, endpoints);
  nlohmann::json doc = nlohmann::json::object();
  if (!existing.empty()) {
    doc = nlohmann::json::parse(existing, nullptr, false);
    if (!doc.is_object()) return failWith(exit_code::kUsage, "the agent's MCP configuration file is not a JSON object");
  }
  const bool openCode = format == McpFormat::kOpenCodeJson;
  nlohmann::json& table = doc[openCode ? "mcp" : "mcpServers"];
  if (!table.is_object()) table = nlohmann::json::object();
  for (const auto& server : servers) {
    nlohmann::json entry;
    if (server.viaProxy()) {
      const std::string& url = endpoints.at(server.name);
      if (openCode)
        entry = {{"type", "remote"}, {"url", url}, {"enabled", true}, {"oauth", false}};
      else if (format == McpFormat::kQwenSettingsJson)
        entry = {{"httpUrl", url}};
      else
        entry = {{"type", "http"}, {"url", url}};
      table[server.name] = std::move(entry);
      continue;
    }
    const auto argv = mcpServerArgv(server);
    if (openCode) {
      entry = {{"type", "local"}, {"command", argv}, {"enabled", true}};
      if (!server.env.empty()) entry["environment"] = server.env;
    } else {
      entry = {{"command", argv.front()}, {"args", std::vector<std::string>(argv.begin() + 1, argv.end())}};
      if (!server.env.empty()) entry["env"] = server.env;
    }
    table[server.name] = std::move(entry);
  }
  try {
    return doc.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {  // a string that is not UTF-8
    return failWith(exit_code::kUsage, "cannot write the agent's MCP configuration: {}", e.what());
  }
}

}  // namespace airlock::agents
