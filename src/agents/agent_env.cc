#include "agents/agent_env.h"

#include <cstdint>
#include <optional>

namespace airlock::agents {
namespace {

bool isNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

bool isEnvName(std::string_view name) {
  bool valid = !name.empty() && isNameStart(name.front());
  for (char c : name) valid = valid && isNameChar(c);
  return valid;
}

namespace {

/// One ${...} reference starting at a "${".
struct Reference {
  std::string_view name;
  std::optional<std::string_view> fallback;  ///< the part after ":-", if any
  std::optional<size_t> tail;                ///< N of ${NAME: -N}: the value's last N bytes
  size_t end = 0;                            ///< offset just past the closing '}'
};

/// Parses the reference whose "${" is at `at`; an error text when malformed.
std::expected<Reference, std::string> parseReference(std::string_view text, size_t at) {
  size_t close = text.find('}', at + 2);
  if (close == std::string_view::npos) return std::unexpected("unterminated ${");
  std::string_view body = text.substr(at + 2, close - at - 2);
  Reference ref;
  if (size_t cut = body.find(": -"); cut != std::string_view::npos) {
    std::string_view digits = body.substr(cut + 3);
    size_t n = 0;
    for (char c : digits) n = c >= '0' && c <= '9' && n < 100000 ? n * 10 + static_cast<size_t>(c - '0') : SIZE_MAX;
    if (digits.empty() || n == SIZE_MAX)
      return std::unexpected("bad tail '" + std::string(body) + "' (use ${NAME: -N}, N a number of bytes)");
    ref.tail = n;
    body = body.substr(0, cut);
  }
  size_t sep = body.find(":-");
  ref.name = body.substr(0, sep);
  if (sep != std::string_view::npos) ref.fallback = body.substr(sep + 2);
  ref.end = close + 1;
  if (!isEnvName(ref.name))
    return std::unexpected("bad variable name '" + std::string(ref.name) + "' (use ${NAME} or ${NAME:-default})");
  return ref;
}

}  // namespace

bool matchesEnvPattern(const std::vector<std::string>& patterns, std::string_view name) {
  for (const auto& entry : patterns) {
    std::string_view pattern = entry;
    if (pattern.ends_with('*') ? name.starts_with(pattern.substr(0, pattern.size() - 1)) : name == pattern) return true;
  }
  return false;
}

bool forwardsEnv(const AgentSpec& spec, std::string_view name) { return matchesEnvPattern(spec.envForward, name); }

EnvMap forwardedEnv(const AgentSpec& spec, const EnvMap& hostEnv) {
  EnvMap out;
  for (const auto& [name, value] : hostEnv) {
    if (forwardsEnv(spec, name)) out.emplace(name, value);
  }
  return out;
}

Result<> checkTemplate(std::string_view text) {
  for (size_t at = text.find("${"); at != std::string_view::npos; at = text.find("${", at)) {
    auto ref = parseReference(text, at);
    if (!ref) return fail("{} at offset {}", ref.error(), at);
    at = ref->end;
  }
  return {};
}

std::string expandTemplate(std::string_view text, const EnvMap& env) {
  std::string out;
  size_t done = 0;
  for (size_t at = text.find("${"); at != std::string_view::npos; at = text.find("${", at)) {
    auto ref = parseReference(text, at);
    if (!ref) {
      at += 2;
      continue;
    }
    out.append(text.substr(done, at - done));
    auto it = env.find(std::string(ref->name));
    bool set = it != env.end() && (!ref->fallback || !it->second.empty());
    if (set) {
      const std::string& value = it->second;
      out += ref->tail && *ref->tail < value.size() ? value.substr(value.size() - *ref->tail) : value;
    } else if (ref->fallback) {
      out.append(*ref->fallback);
    }
    at = done = ref->end;
  }
  out.append(text.substr(done));
  return out;
}

std::map<std::string, std::string> expandFiles(const std::map<std::string, std::string>& files, const EnvMap& env) {
  std::map<std::string, std::string> out;
  for (const auto& [path, content] : files) out.emplace(path, expandTemplate(content, env));
  return out;
}

}  // namespace airlock::agents
