#include "config/settings.h"

namespace airlock::config {
namespace {

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

std::string_view verifyModeName(VerifyMode mode) {
  switch (mode) {
    case VerifyMode::kOff: return "off";
    case VerifyMode::kWarn: return "warn";
    case VerifyMode::kRequire: return "require";
  }
  return "?";
}

std::optional<VerifyMode> parseVerifyMode(std::string_view text) {
  for (auto m : {VerifyMode::kOff, VerifyMode::kWarn, VerifyMode::kRequire})
    if (verifyModeName(m) == text) return m;
  return std::nullopt;
}

std::optional<EgressProfile> parseEgressProfile(std::string_view text) {
  auto profile = egress::parseProfile(text);
  return profile ? std::optional(*profile) : std::nullopt;
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

bool isHostPattern(std::string_view text) { return egress::parseHostRule(text).has_value(); }

bool isEnvPattern(std::string_view text) {
  std::string_view name = text.ends_with('*') ? text.substr(0, text.size() - 1) : text;
  if (name.empty()) return false;  // "*" alone would forward the whole environment
  if (name.front() >= '0' && name.front() <= '9') return false;
  for (char c : name)
    if (!isEnvChar(c)) return false;
  return true;
}

bool isTokenSource(std::string_view text) {
  return (text.starts_with("env:") && text.size() > 4) || (text.starts_with("secret:") && text.size() > 7);
}

}  // namespace airlock::config
