#pragma once
// Strict loading of config files: the user config
// ($XDG_CONFIG_HOME/airlock/config.yaml) and the repo config (.airlock.yaml
// at the workspace root). Both use the same keys:
//
//   vcpus: 2                        # 1-64
//   memory_mib: 4096                # 128-65536
//   egress_profile: standard        # permissive | standard | locked
//   allow_hosts: [example.com, "internal.example.com:8443"]
//   remove_hosts: [registry.npmjs.org]
//   host_ports: [11434]             # 1-65535
//   env_forward: [OPENAI_API_KEY, "MYTOOL_*"]
//   exclude: ["*.sqlite", data/]    # gitignore syntax
//   workspace_mode: snapshot        # snapshot | direct
//   review: interactive             # interactive | auto | all | none
//   image: /path/to/rootfs-or-erofs
//   direct_mode_acknowledged: false
//   agents:                         # custom agents, keyed by name, agent spec schema
//     my-agent: {description: ..., image: {...}, command: [...]}
//   mcp_servers:                    # MCP servers the agent starts in the VM (agents/mcp.h)
//     fs: {npm: "@modelcontextprotocol/server-filesystem@2026.8.31", args: [/workspace]}
//     tool: {command: [/usr/bin/tool, --stdio], env: {LEVEL: "2"}}
//     notes: {host: true, command: [notes-mcp], tools: [search]}   # on the host, behind the proxy
//     docs: {url: "https://mcp.example.com/mcp", token: secret:DOCS, tools: [search]}   # remote, same proxy
//   remove_mcp_servers: [tool]      # names taken out (what a repo config may say)
//
// Unknown or duplicate keys, wrong types and bad values are errors naming the
// file, line and key (exit_code::kUsage). A file larger than kMaxConfigBytes,
// a symlink, or anything but a regular file is refused.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "config/settings.h"

namespace airlock::config {

/// Largest config file airlock reads.
inline constexpr size_t kMaxConfigBytes = 256 * 1024;

/// The repo config's file name at the workspace root.
inline constexpr std::string_view kRepoConfigName = ".airlock.yaml";

/// The other spelling read as the same repo config (as Docker Compose reads
/// both); a workspace with both files is refused.
inline constexpr std::string_view kRepoConfigAltName = ".airlock.yml";

/// The user config file in `configDir` (HostDirs::config): configDir/config.yaml.
std::string userConfigPath(const std::string& configDir);

/// Parses the text of one config file; `fileName` names it in errors (which
/// escape the file's own text with visibleText()). `repo`: a repo config,
/// whose `mcp_servers` are read by name only (they are ignored anyway).
Result<ConfigLayer> parseConfig(std::string_view text, const std::string& fileName, bool repo = false);

/// Reads and parses the config file at `path`; nullopt when it does not exist.
Result<std::optional<ConfigLayer>> loadConfigFile(const std::string& path);

/// Reads and parses `.airlock.yaml` (or `.airlock.yml`) at the root of
/// `workspace` (never through a symlink); nullopt when there is none. Fails
/// (kUsage) when both exist. `path`, when given, receives the file read (the
/// .yaml name when there is none).
Result<std::optional<ConfigLayer>> loadRepoConfig(const std::string& workspace, std::string* path = nullptr);

}  // namespace airlock::config
