#include "config/loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "agents/spec_parser.h"
#include "agents/yaml_number.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/visible_text.h"

namespace airlock::config {
namespace {

constexpr std::string_view kKeys[] = {"vcpus",
                                      "memory_mib",
                                      "egress_profile",
                                      "allow_hosts",
                                      "remove_hosts",
                                      "host_ports",
                                      "env_forward",
                                      "exclude",
                                      "workspace_mode",
                                      "review",
                                      "image",
                                      "agents",
                                      "direct_mode_acknowledged",
                                      "image_verify",
                                      "image_verify_key",
                                      "image_verify_trusted_root",
                                      "image_verify_issuer",
                                      "image_verify_subject",
                                      "settings_import",
                                      "extra_ca_certs",
                                      "git_token",
                                      "git_hosts",
                                      "git_ssh_agent",
                                      "git_ssh_keys",
                                      "git_ssh_confirm",
                                      "mcp_servers",
                                      "remove_mcp_servers"};

std::string knownKeys() {
  std::string out;
  for (auto k : kKeys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

/// Reads one config document, turning every fault into an Error naming the
/// file, line and key.
class ConfigReader {
 public:
  /// `repo`: the file is a repo config (untrusted; see mcpServers()).
  ConfigReader(const std::string& file, bool repo) : file_(file), repo_(repo) {}

  Result<ConfigLayer> read(const YAML::Node& root) {
    ConfigLayer layer;
    if (root.IsNull() || !root.IsDefined()) return layer;
    if (!root.IsMap()) return error(root, "a config file must be a YAML mapping of keys to values");
    std::set<std::string> seen;
    for (const auto& entry : root) {
      if (!entry.first.IsScalar()) return error(entry.first, "keys must be plain strings");
      const std::string key = entry.first.Scalar();
      if (!seen.insert(key).second) return error(entry.first, fmt::format("duplicate key '{}'", key));
      if (auto r = readKey(key, entry.second, layer); !r) return std::unexpected(r.error());
    }
    return layer;
  }

 private:
  /// The message is escaped (visibleText): it may quote the file's own text.
  std::unexpected<Error> error(const YAML::Node& at, const std::string& message) const {
    const YAML::Mark mark = at.Mark();
    if (mark.is_null()) return failWith(exit_code::kUsage, "{}: {}", file_, visibleText(message));
    return failWith(exit_code::kUsage, "{}:{}:{}: {}", file_, mark.line + 1, mark.column + 1, visibleText(message));
  }

  /// A plain decimal integer in [min, max] (agents::plainDecimal).
  Result<unsigned> number(const std::string& key, const YAML::Node& n, unsigned min, unsigned max) {
    auto bad = [&] { return error(n, fmt::format("'{}' must be a plain decimal integer from {} to {}", key, min, max)); };
    auto value = agents::plainDecimal(n);
    if (!value || *value < min || *value > max) return bad();
    return static_cast<unsigned>(*value);
  }

  Result<std::string> word(const std::string& key, const YAML::Node& n) {
    if (!n.IsScalar() || n.Scalar().empty()) return error(n, fmt::format("'{}' must be a non-empty string", key));
    return n.Scalar();
  }

  /// true or false (YAML's spellings of them).
  Result<> boolean(const std::string& key, const YAML::Node& n, std::optional<bool>& out) {
    bool value = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, value))
      return error(n, fmt::format("'{}' must be true or false", key));
    out = value;
    return {};
  }

  Result<> strings(const std::string& key, const YAML::Node& n, bool (*valid)(std::string_view), const char* what,
                   std::vector<std::string>& out) {
    if (!n.IsSequence()) return error(n, fmt::format("'{}' must be a list of strings", key));
    for (const auto& item : n) {
      if (!item.IsScalar() || item.Scalar().empty())
        return error(item, fmt::format("'{}' must be a list of non-empty strings", key));
      if (valid && !valid(item.Scalar()))
        return error(item, fmt::format("'{}' in '{}' is not {}", item.Scalar(), key, what));
      out.push_back(item.Scalar());
    }
    return {};
  }

  template <typename T>
  Result<> named(const std::string& key, const YAML::Node& n, std::optional<T> (*parse)(std::string_view),
                 const char* choices, std::optional<T>& out) {
    auto text = word(key, n);
    if (!text) return std::unexpected(text.error());
    out = parse(*text);
    if (!out) return error(n, fmt::format("'{}' must be one of {} (got '{}')", key, choices, *text));
    return {};
  }

  Result<> agents(const YAML::Node& n, std::vector<agents::AgentSpec>& out) {
    if (!n.IsMap()) return error(n, "'agents' must be a mapping of agent names to agent specs");
    for (const auto& entry : n) {
      if (!entry.first.IsScalar()) return error(entry.first, "agent names must be plain strings");
      const std::string name = entry.first.Scalar();
      if (!entry.second.IsMap()) return error(entry.second, fmt::format("agent '{}' must be a mapping", name));
      YAML::Node spec = YAML::Clone(entry.second);
      if (!spec["name"]) spec["name"] = name;
      auto parsed = agents::parseAgentSpec(YAML::Dump(spec), name + ".yaml");
      if (!parsed)
        return error(entry.first, fmt::format("agent '{}': {}", name, parsed.error().message));
      out.push_back(std::move(*parsed));
    }
    return {};
  }

  /// `mcp_servers`: name -> {npm: PACKAGE@VERSION | command: [PROGRAM, ARGS...] | url: URL, args: [...],
  /// env: {...}, host: true, tools: [NAME...], token: env:NAME | secret:NAME}.
  /// In a repo config only the names are read: the servers are ignored
  /// there whatever they say (merge.h), so a typo in one does not fail the run.
  Result<> mcpServers(const YAML::Node& n, std::vector<agents::McpServer>& out) {
    if (!n.IsMap()) return error(n, "'mcp_servers' must be a mapping of server names to servers");
    std::set<std::string> names;
    for (const auto& entry : n) {
      if (!entry.first.IsScalar() || (!repo_ && !agents::isMcpServerName(entry.first.Scalar())))
        return error(entry.first, "MCP server names are 1-32 letters, digits, '-' or '_'");
      if (!names.insert(entry.first.Scalar()).second)
        return error(entry.first, fmt::format("duplicate MCP server '{}'", entry.first.Scalar()));
      agents::McpServer server;
      server.name = entry.first.Scalar();
      if (repo_) {
        out.push_back(std::move(server));
        continue;
      }
      const std::string where = "MCP server '" + server.name + "'";
      const YAML::Node& body = entry.second;
      if (!body.IsMap()) return error(body, where + " must be a mapping with npm or command");
      std::set<std::string> fields;
      for (const auto& field : body) {
        const std::string k = field.first.IsScalar() ? field.first.Scalar() : "";
        const YAML::Node& v = field.second;
        if (!fields.insert(k).second) return error(field.first, fmt::format("{}: duplicate key '{}'", where, k));
        if (k == "npm") {
          auto text = word("npm", v);
          if (!text) return std::unexpected(text.error());
          auto pin = agents::parseNpmPin(*text);
          if (!pin) return error(v, where + ": " + pin.error().message);
          std::tie(server.npmPackage, server.npmVersion) = *pin;
        } else if (k == "command" || k == "args") {
          auto& list = k == "command" ? server.command : server.args;
          if (!v.IsSequence()) return error(v, fmt::format("{}: '{}' must be a list of strings", where, k));
          for (const auto& item : v) {
            if (!item.IsScalar() || !plainText(item.Scalar()))
              return error(item, fmt::format("{}: '{}' must be a list of strings of plain text (UTF-8, no "
                                             "control characters)",
                                             where, k));
            list.push_back(item.Scalar());
          }
        } else if (k == "env") {
          if (!v.IsMap()) return error(v, where + ": 'env' must be a mapping of variable names to values");
          for (const auto& var : v) {
            const std::string name = var.first.IsScalar() ? var.first.Scalar() : "";
            if (!isEnvPattern(name) || name.ends_with('*') || !var.second.IsScalar() || !plainText(var.second.Scalar()))
              return error(var.first, where + ": 'env' must map variable names to values of plain text");
            if (!server.env.emplace(name, var.second.Scalar()).second)
              return error(var.first, fmt::format("{}: duplicate variable '{}'", where, name));
          }
        } else if (k == "url" || k == "token") {
          auto text = word(k, v);
          if (!text) return std::unexpected(text.error());
          (k == "url" ? server.url : server.token) = *text;
        } else if (k == "host") {
          if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false"))
            return error(v, where + ": 'host' must be true or false");
          server.host = v.Scalar() == "true";
        } else if (k == "tools") {
          if (!v.IsSequence()) return error(v, where + ": 'tools' must be a list of tool names");
          for (const auto& item : v) {
            if (!item.IsScalar() || item.Scalar().empty() || !plainText(item.Scalar()))
              return error(item, where + ": 'tools' must be a list of tool names of plain text");
            server.tools.push_back(item.Scalar());
          }
        } else {
          return error(
              field.first,
              fmt::format("{}: unknown key '{}' (known: npm, command, url, args, env, host, tools, token)", where, k));
        }
      }
      if (!server.npmPackage.empty() + !server.command.empty() + !server.url.empty() != 1)
        return error(body, where + " needs exactly one of npm (PACKAGE@VERSION), command ([PROGRAM, ARGS...]) or url");
      if (!server.token.empty() && server.url.empty())
        return error(body, where + ": 'token' goes with url (a remote server)");
      if (!server.url.empty()) {
        if (!agents::isRemoteMcpUrl(server.url))
          return error(body, where +
                                 ": url must be https://HOST/..., or http:// to this machine (127.0.0.1, [::1], "
                                 "localhost)");
        if (server.host)
          return error(body, where + ": host: true is for a command; a url server is reached from the host already");
        if (!server.args.empty() || !server.env.empty())
          return error(body, where + ": args and env are for a command; a url server takes url, token and tools");
        if (!server.token.empty() && !isTokenSource(server.token))
          return error(body, where +
                                 ": token takes env:NAME or secret:NAME (airlock secret set NAME), never the "
                                 "token itself");
        if (server.tools.empty())
          return error(body, where +
                                 " is reached through airlock's proxy: list the tools the agent may call (tools: "
                                 "[NAME, ...])");
      } else if (server.host) {
        if (!server.npmPackage.empty())
          return error(body, where +
                                 ": npm installs a server into the VM's image; a host server is command: "
                                 "[PROGRAM, ARGS...] on your host");
        const std::string& program = server.command.front();
        if (program.empty() || (!program.starts_with('/') && program.find('/') != std::string::npos))
          return error(body, where + ": the command's program must be an absolute path or a name on your PATH");
        if (server.tools.empty())
          return error(body, where + " runs on your host: list the tools the agent may call (tools: [NAME, ...])");
      } else {
        if (!server.tools.empty())
          return error(body, where +
                                 ": 'tools' (the allowlist) needs host: true or url; in the VM the agent starts "
                                 "the server itself and gets all its tools");
        if (!server.command.empty() && !server.command.front().starts_with('/'))
          return error(body, where + ": the command's program must be an absolute path in the VM (/usr/bin/...)");
      }
      out.push_back(std::move(server));
    }
    return {};
  }

  /// Valid UTF-8 with nothing visibleText() would escape (no control characters).
  static bool plainText(const std::string& text) {
    bool escaped = false;
    visibleText(text, {}, &escaped);
    return !escaped;
  }

  Result<> readKey(const std::string& key, const YAML::Node& n, ConfigLayer& layer) {
    if (key == "vcpus" || key == "memory_mib") {
      bool cpus = key == "vcpus";
      auto value = cpus ? number(key, n, 1, 64) : number(key, n, 128, 65536);
      if (!value) return std::unexpected(value.error());
      (cpus ? layer.cpus : layer.memoryMib) = *value;
      return {};
    }
    if (key == "egress_profile")
      return named(key, n, parseEgressProfile, "permissive, standard, locked", layer.egressProfile);
    if (key == "workspace_mode") return named(key, n, parseWorkspaceMode, "snapshot, direct", layer.workspaceMode);
    if (key == "review") return named(key, n, parseReviewPolicy, "interactive, auto, all, none", layer.review);
    if (key == "allow_hosts") return strings(key, n, isHostPattern, "a host name or HOST:PORT", layer.allowHosts);
    if (key == "remove_hosts") return strings(key, n, isHostPattern, "a host name", layer.removeHosts);
    if (key == "env_forward")
      return strings(key, n, isEnvPattern, "a variable name or PREFIX_*", layer.envForward);
    if (key == "exclude") return strings(key, n, nullptr, "", layer.excludes);
    if (key == "host_ports") {
      if (!n.IsSequence()) return error(n, "'host_ports' must be a list of port numbers");
      for (const auto& item : n) {
        auto port = number(key, item, 1, 65535);
        if (!port) return std::unexpected(port.error());
        layer.hostPorts.push_back(*port);
      }
      return {};
    }
    if (key == "image") {
      auto image = word(key, n);
      if (!image) return std::unexpected(image.error());
      layer.image = *image;
      return {};
    }
    if (key == "direct_mode_acknowledged") return boolean(key, n, layer.directModeAcknowledged);
    if (key == "settings_import") return boolean(key, n, layer.settingsImport);
    if (key == "agents") return agents(n, layer.agents);
    if (key == "mcp_servers") return mcpServers(n, layer.mcpServers);
    if (key == "remove_mcp_servers")
      return strings(
          key, n, [](std::string_view s) { return agents::isMcpServerName(s); }, "an MCP server name",
          layer.removeMcpServers);
    if (key == "image_verify") return named(key, n, parseVerifyMode, "off, warn, require", layer.imageVerify);
    if (key == "git_token") {
      auto value = word(key, n);
      if (!value) return std::unexpected(value.error());
      layer.gitToken = *value;
      return {};
    }
    if (key == "git_hosts") {
      if (!n.IsSequence()) return error(n, "'git_hosts' must be a list of host names");
      for (const auto& item : n) {
        auto host = word(key, item);
        if (!host) return std::unexpected(host.error());
        layer.gitHosts.push_back(*host);
      }
      return {};
    }
    if (key == "git_ssh_agent") return boolean(key, n, layer.gitSshAgent);
    if (key == "git_ssh_confirm") return boolean(key, n, layer.gitSshConfirm);
    if (key == "git_ssh_keys") {
      if (!n.IsSequence()) return error(n, "'git_ssh_keys' must be a list of key fingerprints (SHA256:...)");
      for (const auto& item : n) {
        auto fingerprint = word("git_ssh_keys", item);
        if (!fingerprint) return std::unexpected(fingerprint.error());
        layer.gitSshKeys.push_back(*fingerprint);
      }
      return {};
    }
    if (key == "extra_ca_certs") {
      auto value = word(key, n);
      if (!value) return std::unexpected(value.error());
      layer.extraCaCerts = *value;
      return {};
    }
    if (key == "image_verify_key" || key == "image_verify_trusted_root" || key == "image_verify_issuer" ||
        key == "image_verify_subject") {
      auto value = word(key, n);
      if (!value) return std::unexpected(value.error());
      auto& field = key == "image_verify_key"            ? layer.imageVerifyKey
                    : key == "image_verify_trusted_root" ? layer.imageVerifyTrustedRoot
                    : key == "image_verify_issuer"       ? layer.imageVerifyIssuer
                                                         : layer.imageVerifySubject;
      field = *value;
      return {};
    }
    return error(n, fmt::format("unknown key '{}' (known keys: {})", key, knownKeys()));
  }

  const std::string& file_;
  const bool repo_;
};

/// Reads the regular file `name` in `dirFd` (never through a symlink) up to
/// kMaxConfigBytes; nullopt when it does not exist.
Result<std::optional<std::string>> readConfigText(int dirFd, const std::string& name, const std::string& shown) {
  Fd fd(::openat(dirFd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::optional<std::string>{};
    if (errno == ELOOP)
      return failWith(exit_code::kUsage, "{} is a symlink; airlock reads config files only when they are regular "
                      "files (replace the link with the file itself)", shown);
    return failWith(exit_code::kUsage, "cannot open {}: {}", shown, errnoText(errno));
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return failWith(exit_code::kUsage, "cannot stat {}: {}", shown, errnoText(errno));
  if (!S_ISREG(st.st_mode)) return failWith(exit_code::kUsage, "{} is not a regular file", shown);
  if (static_cast<size_t>(st.st_size) > kMaxConfigBytes)
    return failWith(exit_code::kUsage, "{} is {} bytes; config files may be at most {} KiB", shown, st.st_size,
                    kMaxConfigBytes / 1024);
  std::string text(kMaxConfigBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failWith(exit_code::kUsage, "cannot read {}: {}", shown, errnoText(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxConfigBytes)
    return failWith(exit_code::kUsage, "{} is larger than {} KiB", shown, kMaxConfigBytes / 1024);
  text.resize(got);
  return std::optional<std::string>(std::move(text));
}

Result<std::optional<ConfigLayer>> parseIfPresent(Result<std::optional<std::string>> text, const std::string& shown,
                                                  bool repo) {
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::optional<ConfigLayer>{};
  auto layer = parseConfig(**text, shown, repo);
  if (!layer) return std::unexpected(layer.error());
  return std::optional<ConfigLayer>(std::move(*layer));
}

}  // namespace

std::string userConfigPath(const std::string& configDir) { return configDir + "/config.yaml"; }

Result<ConfigLayer> parseConfig(std::string_view text, const std::string& fileName, bool repo) {
  if (text.size() > kMaxConfigBytes)
    return failWith(exit_code::kUsage, "{} is larger than {} KiB", fileName, kMaxConfigBytes / 1024);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return failWith(exit_code::kUsage, "{}:{}:{}: {}", fileName, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  try {
    return ConfigReader(fileName, repo).read(root);
  } catch (const YAML::Exception& e) {
    return failWith(exit_code::kUsage, "{}: {}", fileName, e.what());
  }
}

Result<std::optional<ConfigLayer>> loadConfigFile(const std::string& path) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  Fd dirFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirFd) {
    if (errno == ENOENT) return std::optional<ConfigLayer>{};
    return failWith(exit_code::kUsage, "cannot open {}: {}", dir, errnoText(errno));
  }
  return parseIfPresent(readConfigText(dirFd.get(), path.substr(slash + 1), path), path, false);
}

Result<std::optional<ConfigLayer>> loadRepoConfig(const std::string& workspace, std::string* path) {
  Fd dirFd(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirFd) return failWith(exit_code::kUsage, "cannot open the workspace {}: {}", workspace, errnoText(errno));
  auto exists = [&](std::string_view name) {
    struct stat st {};
    return ::fstatat(dirFd.get(), std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  };
  bool yaml = exists(kRepoConfigName);
  bool yml = exists(kRepoConfigAltName);
  if (yaml && yml)
    return failWith(exit_code::kUsage, "{0} has both {1} and {2}; airlock reads either as the repo config: merge "
                    "them into {1} and remove {2}", workspace, kRepoConfigName, kRepoConfigAltName);
  std::string name(yml ? kRepoConfigAltName : kRepoConfigName);
  std::string shown = workspace + "/" + name;
  if (path) *path = shown;
  return parseIfPresent(readConfigText(dirFd.get(), name, shown), shown, true);
}

}  // namespace airlock::config
