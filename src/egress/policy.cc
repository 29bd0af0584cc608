#include "egress/policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

#include "common/exit_codes.h"

namespace airlock::egress {
namespace {

std::string normalize(std::string_view name) {
  std::string out(name);
  if (!out.empty() && out.back() == '.') out.pop_back();
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool validLabel(std::string_view label) {
  if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
  return std::all_of(label.begin(), label.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_'; });
}

Result<uint16_t> parsePort(std::string_view text, std::string_view what) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535)
    return failWith(exit_code::kUsage, "invalid port '{}' in {}", text, what);
  return static_cast<uint16_t>(value);
}

}  // namespace

const char* profileName(Profile profile) {
  switch (profile) {
    case Profile::kPermissive: return "permissive";
    case Profile::kStandard: return "standard";
    case Profile::kLocked: return "locked";
  }
  return "?";
}

Result<Profile> parseProfile(std::string_view text) {
  for (Profile p : {Profile::kPermissive, Profile::kStandard, Profile::kLocked})
    if (text == profileName(p)) return p;
  return failWith(exit_code::kUsage, "unknown egress profile '{}' (permissive, standard or locked)", text);
}

bool HostRule::matches(std::string_view name) const {
  std::string n = normalize(name);
  if (pattern.starts_with("*.")) {
    std::string_view suffix = std::string_view(pattern).substr(1);  // ".example.com"
    return n.size() > suffix.size() && n.ends_with(suffix);
  }
  return n == pattern;
}

bool HostRule::allowsPort(uint16_t port) const {
  if (ports.empty()) return port == 80 || port == 443;
  return std::find(ports.begin(), ports.end(), port) != ports.end();
}

Result<HostRule> parseHostRule(std::string_view text) {
  std::string_view host = text;
  HostRule rule;
  if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) return failWith(exit_code::kUsage, "'{}': IP literals are not allowed, name a host", text);
    auto port = parsePort(text.substr(colon + 1), text);
    if (!port) return std::unexpected(port.error());
    rule.ports.push_back(*port);
    host = text.substr(0, colon);
  }
  std::string name = normalize(host);
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1 || name.starts_with('['))
    return failWith(exit_code::kUsage, "'{}': IP literals are not allowed, name a host", text);
  std::string_view rest = name;
  if (rest.starts_with("*.")) rest.remove_prefix(2);
  if (rest.empty() || rest.size() > 253 || rest.find('.') == std::string_view::npos)
    return failWith(exit_code::kUsage, "'{}' is not a DNS name with a domain (e.g. api.example.com)", text);
  for (size_t start = 0; start <= rest.size();) {
    size_t dot = rest.find('.', start);
    if (dot == std::string_view::npos) dot = rest.size();
    if (!validLabel(rest.substr(start, dot - start)))
      return failWith(exit_code::kUsage, "'{}' is not a valid host name ('*.' is allowed only as the leftmost label)",
                      text);
    start = dot + 1;
  }
  if (std::all_of(rest.begin(), rest.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; }))
    return failWith(exit_code::kUsage, "'{}': IP literals are not allowed, name a host", text);
  rule.pattern = name;
  return rule;
}

Result<HostPort> parseHostPort(std::string_view text, std::string_view flag) {
  HostPort mapping;
  auto colon = text.find(':');
  auto host = parsePort(text.substr(0, colon), flag);
  if (!host) return std::unexpected(host.error());
  mapping.hostPort = mapping.guestPort = *host;
  if (colon != std::string_view::npos) {
    auto guest = parsePort(text.substr(colon + 1), flag);
    if (!guest) return std::unexpected(guest.error());
    mapping.guestPort = *guest;
  }
  return mapping;
}

bool Policy::allowsName(std::string_view name) const {
  if (profile == Profile::kPermissive) return true;
  return std::any_of(hosts.begin(), hosts.end(), [&](const HostRule& r) { return r.matches(name); });
}

bool Policy::allowsConnection(std::string_view name, uint16_t port) const {
  if (profile == Profile::kPermissive) return true;
  return std::any_of(hosts.begin(), hosts.end(), [&](const HostRule& r) { return r.matches(name) && r.allowsPort(port); });
}

uint16_t Policy::hostPortFor(uint16_t guestPort) const {
  for (const auto& m : hostPorts)
    if (m.guestPort == guestPort) return m.hostPort;
  return 0;
}

}  // namespace airlock::egress
