#include "config/settings.h"

#include <charconv>

namespace airlock::config {
namespace {

bool isDnsChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'; }

bool isEnvChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string_view layerName(Layer layer) {
  switch (layer) {
    case Layer::kBuiltin: return "built-in";
    case Layer::kUser: return "user";
    case Layer::kRepo: return "repo";
    case Layer::kFlag: return "flag";
  }
  return "?";
}

std::string_view profileName(EgressProfile profile) {
  switch (profile) {
    case EgressProfile::kPermissive: return "permissive";
    case EgressProfile::kStandard: return "standard";
    case EgressProfile::kLocked: return "locked";
  }
  return "?";
}

std::string_view workspaceModeName(WorkspaceMode mode) {
  return mode == WorkspaceMode::kDirect ? "direct" : "snapshot";
}

std::string_view reviewPolicyName(ReviewPolicy policy) {
  switch (policy) {
    case ReviewPolicy::kInteractive: return "interactive";
    case ReviewPolicy::kAuto: return "auto";
    case ReviewPolicy::kAll: return "all";
    case ReviewPolicy::kNone: return "none";
  }
  return "?";
}

std::optional<EgressProfile> parseProfile(std::string_view text) {
  for (auto p : {EgressProfile::kPermissive, EgressProfile::kStandard, EgressProfile::kLocked})
    if (profileName(p) == text) return p;
  return std::nullopt;
}

std::optional<WorkspaceMode> parseWorkspaceMode(std::string_view text) {
  for (auto m : {WorkspaceMode::kSnapshot, WorkspaceMode::kDirect})
    if (workspaceModeName(m) == text) return m;
  return std::nullopt;
}

std::optional<ReviewPolicy> parseReviewPolicy(std::string_view text) {
  for (auto p : {ReviewPolicy::kInteractive, ReviewPolicy::kAuto, ReviewPolicy::kAll, ReviewPolicy::kNone})
    if (reviewPolicyName(p) == text) return p;
  return std::nullopt;
}

bool isHostPattern(std::string_view text) {
  std::string_view host = text;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    std::string_view port = text.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) return false;
  }
  if (host.empty() || host.size() > 253 || host.front() == '.' || host.front() == '-' || host.back() == '.' ||
      host.find("..") != std::string_view::npos)
    return false;
  for (char c : host)
    if (!isDnsChar(c)) return false;
  return true;
}

bool isEnvPattern(std::string_view text) {
  std::string_view name = text.ends_with('*') ? text.substr(0, text.size() - 1) : text;
  if (name.empty()) return false;  // "*" alone would forward the whole environment
  if (name.front() >= '0' && name.front() <= '9') return false;
  for (char c : name)
    if (!isEnvChar(c)) return false;
  return true;
}

}  // namespace airlock::config
