#include "agents/spec_parser.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <span>

#include "agents/agent_env.h"
#include "agents/yaml_number.h"
#include "common/exit_codes.h"

namespace airlock::agents {
namespace {

constexpr std::string_view kTopKeys[] = {"name",        "description",   "image",         "command",    "default_args",
                                         "env",         "env_forward",   "home_files",    "seed_files", "settings",
                                         "state",       "state_exclude", "state_max_mib", "cpus",       "memory_mib",
                                         "scratch_mib", "egress",        "login",         "mcp"};
constexpr std::string_view kLoginKeys[] = {"format", "file", "delivery", "hosts", "login_command", "login_hosts", "login_home_files", "login_note", "token_env", "base_url_env", "tls_base_url_env",
                                           "tls_ca_env", "upstream", "paths",
                                           "refresh_url", "client_id", "client_secret", "billing_env",
                                           "account_file", "account_key", "account_hosts", "env",
                                           "home_files"};
constexpr std::string_view kSettingsKeys[] = {"path", "keys"};
constexpr std::string_view kImageKeys[] = {"npm_package", "version", "native_package", "native_version", "binary",
                                           "install_as",  "node",    "archive",        "pypi_package"};
constexpr std::string_view kEgressKeys[] = {"model_hosts", "extra_hosts"};
constexpr std::string_view kMcpKeys[] = {"file", "format", "args"};

bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool isAlnum(char c) { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

bool allOf(std::string_view s, bool (*ok)(char)) {
  for (char c : s) {
    if (!ok(c)) return false;
  }
  return !s.empty();
}

bool isAgentName(std::string_view s) {
  return allOf(s, [](char c) { return isLowerAlnum(c) || c == '-'; }) && s.front() != '-';
}

/// npm package names: optional "@scope/", then lowercase letters, digits, '.', '_', '-'.
bool isNpmName(std::string_view s) {
  auto part = [](std::string_view p) {
    return allOf(p, [](char c) { return isLowerAlnum(c) || c == '.' || c == '_' || c == '-'; }) && p.front() != '.';
  };
  if (!s.starts_with('@')) return part(s);
  size_t slash = s.find('/');
  return slash != std::string_view::npos && part(s.substr(1, slash - 1)) && part(s.substr(slash + 1));
}

/// PyPI project names (PEP 508): letters, digits, '.', '_', '-', starting
/// and ending with a letter or digit.
bool isPypiName(std::string_view s) {
  return allOf(s, [](char c) { return isAlnum(c) || c == '.' || c == '_' || c == '-'; }) && isAlnum(s.front()) &&
         isAlnum(s.back());
}

/// An exact version: digits, letters, '.', '-', '+' (no ranges, tags or "latest").
bool isPinnedVersion(std::string_view s) {
  return allOf(s, [](char c) { return isAlnum(c) || c == '.' || c == '-' || c == '+'; }) && s.front() >= '0' &&
         s.front() <= '9';
}

bool isEnvPattern(std::string_view s) {
  return s.ends_with('*') ? (s.size() == 1 || isEnvName(s.substr(0, s.size() - 1))) : isEnvName(s);
}

/// A relative path without empty, "." or ".." components.
bool isRelativePath(std::string_view s) {
  if (s.empty() || s.front() == '/' || s.find('\0') != std::string_view::npos) return false;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find('/', at);
    if (end == std::string_view::npos) end = s.size();
    std::string_view part = s.substr(at, end - at);
    if (part.empty() || part == "." || part == "..") return false;
    at = end + 1;
  }
  return true;
}

bool isFileName(std::string_view s) { return isRelativePath(s) && s.find('/') == std::string_view::npos; }

bool isHostName(std::string_view s) {
  return allOf(s, [](char c) { return isLowerAlnum(c) || c == '.' || c == '-'; }) && s.front() != '.' &&
         s.front() != '-' && s.find("..") == std::string_view::npos;
}

/// An https:// URL whose authority is a host name and an optional port (no
/// user info, IP literal or fragment): the broker and the refresh send the
/// user's real token there.
bool isHttpsUrl(std::string_view url) {
  if (!url.starts_with("https://") || url.find_first_of(" \t\r\n#") != std::string_view::npos) return false;
  std::string_view authority = url.substr(8, url.find('/', 8) == std::string_view::npos ? std::string_view::npos
                                                                                          : url.find('/', 8) - 8);
  size_t colon = authority.find(':');
  std::string_view host = authority.substr(0, colon);
  if (host.empty() || !isHostName(host)) return false;
  if (colon == std::string_view::npos) return true;
  std::string_view port = authority.substr(colon + 1);
  return !port.empty() && port.size() <= 5 && allOf(port, [](char c) { return c >= '0' && c <= '9'; });
}

std::string keyList(std::span<const std::string_view> keys) {
  std::string out;
  for (auto k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

/// Reads one spec, turning every fault into an Error naming file, line and key.
class SpecReader {
 public:
  explicit SpecReader(std::string_view fileName) : file_(fileName) {}

  Result<AgentSpec> read(const YAML::Node& root) {
    if (!root.IsMap()) return error(root, "an agent spec must be a YAML mapping of keys to values");
    if (auto r = checkKeys(root, "", kTopKeys); !r) return std::unexpected(r.error());
    AgentSpec spec;
    if (auto r = readTop(root, spec); !r) return std::unexpected(r.error());
    return spec;
  }

 private:
  std::unexpected<Error> error(const YAML::Node& at, const std::string& message) const {
    const YAML::Mark mark = at.Mark();
    if (mark.is_null()) return failWith(exit_code::kUsage, "{}: {}", file_, message);
    return failWith(exit_code::kUsage, "{}:{}:{}: {}", file_, mark.line + 1, mark.column + 1, message);
  }

  Result<> checkKeys(const YAML::Node& map, std::string_view section,
                     std::span<const std::string_view> known) {
    std::set<std::string> seen;
    std::string where = section.empty() ? "" : fmt::format(" in '{}'", section);
    for (const auto& entry : map) {
      if (!entry.first.IsScalar()) return error(entry.first, "keys must be plain strings" + where);
      const std::string key = entry.first.Scalar();
      if (!seen.insert(key).second) return error(entry.first, fmt::format("duplicate key '{}'{}", key, where));
      bool isKnown = false;
      for (auto k : known) isKnown = isKnown || k == key;
      if (!isKnown)
        return error(entry.first, fmt::format("unknown key '{}'{} (known keys: {})", key, where, keyList(known)));
    }
    return {};
  }

  /// `map[key]` of a mapping; an undefined node when absent.
  static YAML::Node child(const YAML::Node& map, const char* key) {
    const YAML::Node& constMap = map;
    return constMap[key];
  }

  Result<> missing(const YAML::Node& map, std::string_view key) {
    return error(map, fmt::format("missing required key '{}'", key));
  }

  Result<> string(const YAML::Node& map, const char* key, bool required, std::string& out) {
    YAML::Node n = child(map, key);
    if (!n.IsDefined()) return required ? missing(map, key) : Result<>{};
    if (!n.IsScalar() || n.Scalar().empty()) return error(n, fmt::format("'{}' must be a non-empty string", key));
    out = n.Scalar();
    return {};
  }

  Result<> integer(const YAML::Node& map, const char* key, int min, int max, int& out) {
    YAML::Node n = child(map, key);
    if (!n.IsDefined()) return {};
    auto value = plainDecimal(n);  // one rule for numbers: `cpus: "2"` and `0x10` are errors
    if (!value || *value < static_cast<unsigned long>(min) || *value > static_cast<unsigned long>(max))
      return error(n, fmt::format("'{}' must be a plain decimal integer from {} to {}", key, min, max));
    out = static_cast<int>(*value);
    return {};
  }

  Result<> boolean(const YAML::Node& map, const char* key, bool& out) {
    YAML::Node n = child(map, key);
    if (!n.IsDefined()) return {};
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, out))
      return error(n, fmt::format("'{}' must be true or false", key));
    return {};
  }

  Result<> list(const YAML::Node& map, const char* key, bool (*valid)(std::string_view), const char* what,
                std::vector<std::string>& out) {
    YAML::Node n = child(map, key);
    if (!n.IsDefined()) return {};
    if (!n.IsSequence()) return error(n, fmt::format("'{}' must be a list of strings", key));
    for (const auto& item : n) {
      if (!item.IsScalar()) return error(item, fmt::format("'{}' must be a list of strings", key));
      if (valid && !valid(item.Scalar()))
        return error(item, fmt::format("'{}' in '{}' is not {}", item.Scalar(), key, what));
      out.push_back(item.Scalar());
    }
    return {};
  }

  Result<> stringMap(const YAML::Node& map, const char* key, bool (*validKey)(std::string_view), const char* what,
                     std::map<std::string, std::string>& out) {
    YAML::Node n = child(map, key);
    if (!n.IsDefined()) return {};
    if (!n.IsMap()) return error(n, fmt::format("'{}' must be a mapping of strings to strings", key));
    for (const auto& entry : n) {
      if (!entry.first.IsScalar() || !entry.second.IsScalar())
        return error(entry.first, fmt::format("'{}' must be a mapping of strings to strings", key));
      const std::string& name = entry.first.Scalar();
      if (!validKey(name)) return error(entry.first, fmt::format("'{}' in '{}' is not {}", name, key, what));
      if (!out.emplace(name, entry.second.Scalar()).second)
        return error(entry.first, fmt::format("duplicate key '{}' in '{}'", name, key));
    }
    return {};
  }

  Result<> readTop(const YAML::Node& root, AgentSpec& spec) {
    if (auto r = string(root, "name", true, spec.name); !r) return r;
    if (!isAgentName(spec.name))
      return error(child(root, "name"), fmt::format("name '{}' may contain only a-z, 0-9 and '-'", spec.name));
    if (file_ != spec.name + ".yaml")
      return error(child(root, "name"),
                   fmt::format("name '{}' does not match the file name (expected {}.yaml)", spec.name, spec.name));
    if (auto r = string(root, "description", true, spec.description); !r) return r;
    YAML::Node image = child(root, "image");
    if (!image.IsDefined()) return missing(root, "image");
    if (auto r = readImage(image, spec.image); !r) return r;
    if (auto r = list(root, "command", nullptr, "", spec.command); !r) return r;
    if (spec.command.empty()) {
      YAML::Node n = child(root, "command");
      return n.IsDefined() ? error(n, "'command' must name a program") : missing(root, "command");
    }
    if (auto r = list(root, "default_args", nullptr, "", spec.defaultArgs); !r) return r;
    if (auto r = stringMap(root, "env", isEnvName, "a variable name", spec.env); !r) return r;
    if (auto r = list(root, "env_forward", isEnvPattern, "a variable name or PREFIX*", spec.envForward); !r)
      return r;
    if (auto r = stringMap(root, "home_files", isRelativePath, "a relative path", spec.homeFiles); !r) return r;
    for (const auto& [path, content] : spec.homeFiles) {
      if (auto r = checkTemplate(content); !r)
        return error(child(child(root, "home_files"), path.c_str()),
                     fmt::format("home file '{}': {}", path, r.error().message));
    }
    if (auto r = stringMap(root, "seed_files", isRelativePath, "a relative path", spec.seedFiles); !r) return r;
    for (const auto& [path, content] : spec.seedFiles) {
      if (auto r = checkTemplate(content); !r)
        return error(child(child(root, "seed_files"), path.c_str()),
                     fmt::format("seed file '{}': {}", path, r.error().message));
    }
    if (auto r = readSettings(child(root, "settings"), spec.settings); !r) return r;
    if (auto r = list(root, "state", isRelativePath, "a relative path", spec.state); !r) return r;
    if (auto r = list(root, "state_exclude", isRelativePath, "a relative path", spec.stateExclude); !r) return r;
    if (auto r = integer(root, "state_max_mib", 1, 65536, spec.stateMaxMib); !r) return r;
    if (auto r = integer(root, "cpus", 1, 64, spec.cpus); !r) return r;
    if (auto r = integer(root, "memory_mib", 256, 262144, spec.memoryMib); !r) return r;
    if (auto r = integer(root, "scratch_mib", 512, 1048576, spec.scratchMib); !r) return r;
    YAML::Node egress = child(root, "egress");
    if (egress.IsDefined()) {
      if (!egress.IsMap()) return error(egress, "'egress' must be a mapping");
      if (auto r = checkKeys(egress, "egress", kEgressKeys); !r) return r;
      if (auto r = list(egress, "model_hosts", isHostName, "a host name", spec.egress.modelHosts); !r) return r;
      if (auto r = list(egress, "extra_hosts", isHostName, "a host name", spec.egress.extraHosts); !r) return r;
    }
    YAML::Node mcp = child(root, "mcp");
    if (mcp.IsDefined()) {
      if (!mcp.IsMap()) return error(mcp, "'mcp' must be a mapping");
      if (auto r = checkKeys(mcp, "mcp", kMcpKeys); !r) return r;
      if (auto r = string(mcp, "file", true, spec.mcp.file); !r) return r;
      if (!isRelativePath(spec.mcp.file))
        return error(child(mcp, "file"), "'file' in 'mcp' must be a relative path under $HOME");
      if (auto r = list(mcp, "args", nullptr, "", spec.mcp.args); !r) return r;
      // airlock writes the file at each run, with the servers' env values:
      // never a seed file (kept from the agent's own state), never saved.
      if (spec.seedFiles.contains(spec.mcp.file))
        return error(child(mcp, "file"), "'file' in 'mcp' cannot be one of the seed_files");
      const std::string& f = spec.mcp.file;
      const bool saved = std::any_of(spec.state.begin(), spec.state.end(),
                                     [&](const std::string& p) { return f == p || f.starts_with(p + "/"); });
      if (saved && std::find(spec.stateExclude.begin(), spec.stateExclude.end(), f) == spec.stateExclude.end())
        return error(child(mcp, "file"),
                     "'file' in 'mcp' is under 'state': add it to 'state_exclude' (airlock "
                     "writes it at each run, with the servers' env values)");
      std::string format;
      if (auto r = string(mcp, "format", false, format); !r) return r;
      if (!format.empty()) {
        auto parsed = parseMcpFormat(format);
        if (!parsed)
          return error(child(mcp, "format"),
                       "'format' in 'mcp' must be mcp-servers-json, codex-toml, opencode-json or "
                       "qwen-settings-json");
        spec.mcp.format = *parsed;
      }
    }
    return readLogin(child(root, "login"), spec.login);
  }

  /// `login`: the credential format, files, variables and the broker's
  /// route (agent_spec.h LoginSpec). URLs must be https:// (the broker and
  /// the refresh talk to the real API).
  Result<> readLogin(const YAML::Node& n, LoginSpec& login) {
    if (!n.IsDefined()) return {};
    if (!n.IsMap()) return error(n, "'login' must be a mapping");
    if (auto r = checkKeys(n, "login", kLoginKeys); !r) return r;
    if (auto r = string(n, "format", true, login.format); !r) return r;
    if (login.format != "claude-oauth" && login.format != "gemini-oauth" && login.format != "codex-oauth" &&
        login.format != "opencode-oauth" && login.format != "token")
      return error(child(n, "format"), fmt::format("login format '{}' is not one airlock reads (claude-oauth, "
                                                   "gemini-oauth, codex-oauth, opencode-oauth, token)", login.format));
    // A `token` login is one value in a variable (token_env), no file.
    const bool token = login.format == "token";
    if (token && n["file"].IsDefined())
      return error(child(n, "file"), "a token login has no file: it goes in the variable 'token_env' names");
    if (auto r = string(n, "file", !token, login.file); !r) return r;
    if (!token && !isRelativePath(login.file)) return error(child(n, "file"), "'file' must be a relative path");
    std::string delivery = "broker";
    if (auto r = string(n, "delivery", false, delivery); !r) return r;
    if (delivery != "broker" && delivery != "vm") return error(child(n, "delivery"), "'delivery' is broker or vm");
    login.entersVm = delivery == "vm";
    if (auto r = list(n, "login_command", nullptr, "", login.loginCommand); !r) return r;
    if (auto r = list(n, "login_hosts", isHostName, "a host name", login.loginHosts); !r) return r;
    if (login.loginCommand.empty() != login.loginHosts.empty())
      return error(n, "'login_command' and 'login_hosts' go together (the login VM reaches only those hosts)");
    if (auto r = loginHomeFiles(n, "login_home_files", login, login.loginHomeFiles); !r) return r;
    if (auto r = string(n, "login_note", false, login.loginNote); !r) return r;
    if (login.loginCommand.empty() && (!login.loginHomeFiles.empty() || !login.loginNote.empty()))
      return error(n, "'login_home_files' and 'login_note' go with 'login_command'");
    // OpenCode's ChatGPT endpoint cannot be moved to the broker; every other
    // format is brokered (its real token never enters the VM).
    const bool delivered = login.format == "opencode-oauth" || token;
    if (login.entersVm != delivered)
      return error(login.entersVm ? child(n, "delivery") : n,
                   login.entersVm ? "only an opencode-oauth or token login is delivered into the VM"
                                  : fmt::format("a{} {} login needs 'delivery: vm' (it cannot be brokered)",
                                                token ? "" : "n", login.format));
    if (token && !login.loginCommand.empty())
      return error(child(n, "login_command"), "a token login is given to airlock (stdin or --from-env), not made in a VM");
    if (login.entersVm) return readDeliveredLogin(n, login);
    if (n["hosts"].IsDefined()) return error(child(n, "hosts"), "'hosts' goes with 'delivery: vm' (a brokered login's "
                                                                "hosts are the broker's to reach)");
    for (auto [key, out] : {std::pair{"token_env", &login.tokenEnv}, std::pair{"base_url_env", &login.baseUrlEnv},
                            std::pair{"tls_base_url_env", &login.tlsBaseUrlEnv}, std::pair{"tls_ca_env", &login.tlsCaEnv}}) {
      if (auto r = string(n, key, std::string_view(key) == "base_url_env", *out); !r) return r;
      if (!out->empty() && !isEnvName(*out)) return error(child(n, key), fmt::format("'{}' must be a variable name", key));
    }
    if (login.tlsBaseUrlEnv.empty() != login.tlsCaEnv.empty())
      return error(n, "'tls_base_url_env' and 'tls_ca_env' go together");
    for (auto [key, out] : {std::pair{"upstream", &login.upstream}, std::pair{"refresh_url", &login.refreshUrl}}) {
      if (auto r = string(n, key, true, *out); !r) return r;
      if (!isHttpsUrl(*out))
        return error(child(n, key), fmt::format("'{}' must be an https:// URL naming a host (no user info or IP "
                                                "address)", key));
    }
    if (login.upstream.find_first_of("/?", 8) != std::string::npos)
      return error(child(n, "upstream"), "'upstream' is scheme and host only (https://api.example.com)");
    if (auto r = string(n, "client_id", true, login.clientId); !r) return r;
    if (auto r = string(n, "client_secret", false, login.clientSecret); !r) return r;
    if (auto r = list(n, "paths", nullptr, "", login.paths); !r) return r;
    if (login.paths.empty()) return missing(n, "paths");
    for (const auto& p : login.paths)
      if (!p.starts_with('/')) return error(child(n, "paths"), fmt::format("path '{}' must start with /", p));
    if (auto r = string(n, "account_file", false, login.accountFile); !r) return r;
    if (auto r = string(n, "account_key", false, login.accountKey); !r) return r;
    if (!login.accountFile.empty() && login.accountFile == login.file)
      return error(child(n, "account_file"), "'account_file' must not be the credential file (it goes into the VM)");
    if (!login.accountFile.empty() && (!isRelativePath(login.accountFile) || !login.accountFile.ends_with(".json")))
      return error(child(n, "account_file"), "'account_file' must be a relative path to a JSON file");
    if (auto r = list(n, "account_hosts", isHostName, "a host name", login.accountHosts); !r) return r;
    if (auto r = stringMap(n, "env", isEnvName, "a variable name", login.env); !r) return r;
    if (auto r = loginHomeFiles(n, "home_files", login, login.homeFiles); !r) return r;
    return list(n, "billing_env", isEnvName, "a variable name", login.billingEnv);
  }

  /// A login's map of home files under `key` into `out`: relative paths,
  /// never the credential file (the agent's to write, or airlock's to
  /// deliver), templates that expand.
  Result<> loginHomeFiles(const YAML::Node& n, const char* key, const LoginSpec& login,
                          std::map<std::string, std::string>& out) {
    if (auto r = stringMap(n, key, isRelativePath, "a relative path", out); !r) return r;
    for (const auto& [path, content] : out) {
      if (path == login.file)
        return error(child(child(n, key), path.c_str()), "a login home file cannot be the credential file");
      if (auto r = checkTemplate(content); !r)
        return error(child(child(n, key), path.c_str()), fmt::format("login home file '{}': {}", path, r.error().message));
    }
    return {};
  }

  /// A `delivery: vm` login: its file, the hosts the agent reaches with it,
  /// its billing variables, env and home files; none of the broker's keys.
  Result<> readDeliveredLogin(const YAML::Node& n, LoginSpec& login) {
    for (const char* key : {"base_url_env", "tls_base_url_env", "tls_ca_env", "upstream", "paths",
                            "refresh_url", "client_id", "client_secret", "account_file", "account_key",
                            "account_hosts"})
      if (n[key].IsDefined())
        return error(child(n, key), fmt::format("'{}' is the broker's; a 'delivery: vm' login has none", key));
    // A token goes in its variable; OpenCode's login in its file.
    if (login.format == "token") {
      if (auto r = string(n, "token_env", true, login.tokenEnv); !r) return r;
      if (!isEnvName(login.tokenEnv)) return error(child(n, "token_env"), "'token_env' must be a variable name");
    } else if (n["token_env"].IsDefined()) {
      return error(child(n, "token_env"), "'token_env' goes with a token login (an opencode-oauth login is its file)");
    }
    if (auto r = list(n, "hosts", isHostName, "a host name", login.hosts); !r) return r;
    if (login.hosts.empty()) return missing(n, "hosts");
    if (auto r = stringMap(n, "env", isEnvName, "a variable name", login.env); !r) return r;
    if (auto r = loginHomeFiles(n, "home_files", login, login.homeFiles); !r) return r;
    return list(n, "billing_env", isEnvName, "a variable name", login.billingEnv);
  }

  /// `settings`: a list of paths relative to $HOME, each a string or a
  /// mapping {path, keys} (keys: the top-level keys kept of a JSON file).
  Result<> readSettings(const YAML::Node& n, std::vector<SettingsImport>& out) {
    if (!n.IsDefined()) return {};
    const char* shape = "'settings' must be a list of paths, or of {path: PATH, keys: [KEY...]} for a JSON file";
    if (!n.IsSequence()) return error(n, shape);
    std::set<std::string> seen;
    for (const auto& item : n) {
      SettingsImport entry;
      if (item.IsScalar()) {
        entry.path = item.Scalar();
      } else if (item.IsMap()) {
        if (auto r = checkKeys(item, "settings", kSettingsKeys); !r) return r;
        if (auto r = string(item, "path", true, entry.path); !r) return r;
        if (auto r = list(item, "keys", nullptr, "", entry.keys); !r) return r;
        if (entry.keys.empty()) return error(item, fmt::format("'keys' of '{}' must name at least one key", entry.path));
        if (!entry.path.ends_with(".json"))
          return error(item, fmt::format("'keys' applies to JSON files only ('{}' does not end in .json)", entry.path));
      } else {
        return error(item, shape);
      }
      if (!isRelativePath(entry.path))
        return error(item, fmt::format("'{}' in 'settings' is not a relative path", entry.path));
      if (!seen.insert(entry.path).second) return error(item, fmt::format("'{}' is twice in 'settings'", entry.path));
      out.push_back(std::move(entry));
    }
    return {};
  }

  /// `image: {pypi_package, version, binary, install_as}`: a PyPI program
  /// in a venv (image/pypi_packages.h); `binary` names its console script.
  Result<> readPypiImage(const YAML::Node& image, ImageRecipe& recipe) {
    for (auto key : {"npm_package", "native_package", "native_version", "node", "archive"})
      if (child(image, key).IsDefined())
        return error(child(image, key), fmt::format("'{}' is for npm packages, not with 'pypi_package'", key));
    if (auto r = string(image, "pypi_package", true, recipe.pypiPackage); !r) return r;
    if (!isPypiName(recipe.pypiPackage))
      return error(child(image, "pypi_package"),
                   fmt::format("'pypi_package' = '{}' is not a PyPI project name", recipe.pypiPackage));
    if (auto r = string(image, "version", true, recipe.version); !r) return r;
    if (!isPinnedVersion(recipe.version))
      return error(child(image, "version"),
                   fmt::format("'version' = '{}' is not an exact version (no ranges or tags)", recipe.version));
    if (auto r = string(image, "binary", true, recipe.binary); !r) return r;
    if (!isFileName(recipe.binary))
      return error(child(image, "binary"), fmt::format("'binary' = '{}' is not a console script name", recipe.binary));
    if (auto r = string(image, "install_as", true, recipe.installAs); !r) return r;
    if (!isFileName(recipe.installAs))
      return error(child(image, "install_as"), fmt::format("'install_as' = '{}' is not a file name", recipe.installAs));
    return {};
  }

  Result<> readImage(const YAML::Node& image, ImageRecipe& recipe) {
    if (image.IsScalar()) {
      recipe.reference = image.Scalar();
      if (recipe.reference.empty() || recipe.reference.size() > 512 ||
          recipe.reference.find_first_of(" \t\n") != std::string::npos)
        return error(image, "'image' must be an image reference (ghcr.io/org/agent:tag) or a build recipe mapping");
      return {};
    }
    if (!image.IsMap())
      return error(image, "'image' must be an image reference (ghcr.io/org/agent:tag) or a build recipe mapping");
    if (auto r = checkKeys(image, "image", kImageKeys); !r) return r;
    if (child(image, "pypi_package").IsDefined()) return readPypiImage(image, recipe);
    if (!child(image, "npm_package").IsDefined()) {  // `image: {}`: the base image alone
      for (auto key : kImageKeys)
        if (child(image, std::string(key).c_str()).IsDefined())
          return error(child(image, std::string(key).c_str()), fmt::format("'{}' needs 'npm_package'", key));
      return {};
    }
    struct Field {
      const char* key;
      bool required;
      std::string& out;
      bool (*valid)(std::string_view);
      const char* what;
    };
    const Field fields[] = {
        {"npm_package", true, recipe.npmPackage, isNpmName, "an npm package name"},
        {"version", true, recipe.version, isPinnedVersion, "an exact version (no ranges or tags)"},
        {"native_package", false, recipe.nativePackage, isNpmName, "an npm package name"},
        {"native_version", false, recipe.nativeVersion, isPinnedVersion, "an exact version (no ranges or tags)"},
        {"binary", true, recipe.binary, isRelativePath, "a relative path inside the package"},
        {"install_as", true, recipe.installAs, isFileName, "a file name"},
    };
    for (const auto& f : fields) {
      if (auto r = string(image, f.key, f.required, f.out); !r) return r;
      if (!f.out.empty() && !f.valid(f.out))
        return error(child(image, f.key), fmt::format("'{}' = '{}' is not {}", f.key, f.out, f.what));
    }
    if (!recipe.nativeVersion.empty() && recipe.nativePackage.empty())
      return error(child(image, "native_version"), "'native_version' needs 'native_package'");
    if (auto r = boolean(image, "node", recipe.node); !r) return r;
    if (auto r = string(image, "archive", false, recipe.archive); !r) return r;
    if (!recipe.archive.empty() && recipe.archive != "linux-x64")
      return error(child(image, "archive"), "'archive' must be linux-x64 (the platform airlock's VMs run)");
    if (!recipe.archive.empty() && recipe.node)
      return error(child(image, "archive"), "'archive' and 'node: true' exclude each other");
    return {};
  }

  std::string file_;
};

}  // namespace

Result<AgentSpec> parseAgentSpec(std::string_view yamlText, std::string_view fileName) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yamlText));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return failWith(exit_code::kUsage, "{}: invalid YAML: {}", fileName, e.msg);
    return failWith(exit_code::kUsage, "{}:{}:{}: invalid YAML: {}", fileName, e.mark.line + 1, e.mark.column + 1,
                    e.msg);
  }
  try {
    return SpecReader(fileName).read(root);
  } catch (const YAML::Exception& e) {
    return failWith(exit_code::kUsage, "{}: {}", fileName, e.what());
  }
}

}  // namespace airlock::agents
