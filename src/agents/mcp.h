#pragma once
// MCP servers the agent starts inside its VM (issue 20): declared in the user
// config (config/loader.h `mcp_servers`), put into the agent's image when they
// come from npm, and written into the agent's own MCP configuration (the
// spec's McpConfig) as stdio servers.
//
// Spec: Model Context Protocol, "Transports" (stdio: the client starts the
// server as a subprocess and speaks JSON-RPC over its stdin and stdout).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::agents {

/// One stdio MCP server, run in the VM as the agent user.
struct McpServer {
  std::string name;  ///< isMcpServerName(): the agent sees its tools as this server's
  /// From npm (`npm: "@scope/pkg@1.2.3"`): the package and its exact version,
  /// installed with its dependencies into the agent's image under
  /// /opt/mcp/<name> and run by the image's Node runtime. Empty: `command`.
  std::string npmPackage;
  std::string npmVersion;
  /// Or a program the image already has (`command: [/usr/bin/tool, --stdio]`).
  std::vector<std::string> command;
  std::vector<std::string> args;           ///< arguments after the program
  std::map<std::string, std::string> env;  ///< variables set for the server only
  /// `host: true`: `command` runs on the host, as the user running airlock,
  /// behind airlock's MCP proxy (mcp/host_proxy.h); the agent reaches it
  /// over streamable HTTP at the gateway and may call only `tools`.
  bool host = false;
  /// Or a remote streamable-HTTP server (`url:`), reached by the same
  /// proxy from the host: isRemoteMcpUrl(). Empty: npm or command.
  std::string url;
  /// With `url`: where its bearer token is, "env:NAME" or "secret:NAME"
  /// (read on the host; the proxy sends it; never the VM). "" for none.
  std::string token;
  /// With `host` or `url`: the tools the agent may call (never empty).
  std::vector<std::string> tools;

  /// The agent reaches it through airlock's proxy (`host` or `url`).
  bool viaProxy() const { return host || !url.empty(); }

  bool operator==(const McpServer&) const = default;
};

/// True for a URL a remote server may have: https://HOST[:PORT]/..., or
/// http:// to 127.0.0.1, [::1] or localhost (this machine); no user info,
/// no fragment, no whitespace or control characters.
bool isRemoteMcpUrl(std::string_view url);

/// A server name: 1-32 of [A-Za-z0-9_-], starting with a letter or digit.
bool isMcpServerName(std::string_view name);

/// Splits "PACKAGE@VERSION" ("@scope/pkg@1.2.3", "pkg@1.2.3") into the
/// package and the version, which must be exact (digits, dots, a
/// pre-release or build suffix: no ranges, tags or URLs). Fails with
/// exit_code::kUsage naming the expected form.
Result<std::pair<std::string, std::string>> parseNpmPin(std::string_view text);

/// Where an npm server's wrapper is in the image: /usr/local/bin/mcp-<name>.
std::string mcpWrapperPath(const std::string& name);

/// The program and arguments the agent starts for `server`: the wrapper of
/// an npm server, else its command; then its args.
std::vector<std::string> mcpServerArgv(const McpServer& server);

/// How an agent's MCP file lists stdio servers (the spec's `mcp.format`).
enum class McpFormat {
  /// JSON, "mcpServers": {NAME: {"command", "args", "env"}}: Claude Code's
  /// --mcp-config file, Gemini CLI's and Qwen Code's settings.json.
  kMcpServersJson,
  /// TOML tables [mcp_servers.NAME] with command, args, env: Codex's config.toml.
  kCodexToml,
  /// JSON, "mcp": {NAME: {"type": "local", "command": [argv], "environment"}}:
  /// OpenCode's opencode.json.
  kOpenCodeJson,
  /// As kMcpServersJson, but a streamable-HTTP server is {"httpUrl": URL}:
  /// Qwen Code's settings.json (it takes a "url" for SSE, whatever "type" says).
  kQwenSettingsJson,
};

/// "mcp-servers-json", "codex-toml", "opencode-json", "qwen-settings-json";
/// nullopt for anything else.
std::optional<McpFormat> parseMcpFormat(std::string_view text);
std::string_view mcpFormatName(McpFormat format);

/// `existing` (the file's text; empty: a new file) with `servers` added in
/// `format`: a host server (`host`) as a streamable-HTTP server at its URL
/// in `endpoints` (name -> "http://10.0.2.2:4183/mcp/NAME"; fails with
/// kInternal when it has none), the others as stdio servers. HTTP entries:
/// {"type": "http", "url"} (Claude Code, Gemini CLI, Copilot), {"httpUrl"}
/// (Qwen Code), {"type": "remote", "url"} (OpenCode), `url = ` (Codex). JSON: servers of the same name already there
/// are replaced, the rest of the file is kept; fails (kUsage) when `existing` is not a JSON object. TOML: the tables
/// are appended (TOML basic strings, escaped); fails when `existing` already has a table of one of the servers.
Result<std::string> withMcpServers(const std::string& existing, const std::vector<McpServer>& servers,
                                   McpFormat format = McpFormat::kMcpServersJson,
                                   const std::map<std::string, std::string>& endpoints = {});

}  // namespace airlock::agents
