#pragma once
// The one rule for numbers in airlock's YAML (agent specs, user and repo
// config): a plain decimal integer, so `cpus: "2"` or `memory_mib: 0x1000`
// is an error naming the key instead of a silent conversion.

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace airlock::agents {

/// The value of `n` when it is a plain (unquoted, untagged) decimal integer of
/// at most 9 digits: digits only, no sign, no leading zero, no hex, octal or
/// float forms; nullopt otherwise.
inline std::optional<unsigned long> plainDecimal(const YAML::Node& n) {
  if (!n.IsScalar() || n.Tag() != "?") return std::nullopt;
  const std::string& text = n.Scalar();
  if (text.empty() || text.size() > 9 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoul(text);
}

}  // namespace airlock::agents
