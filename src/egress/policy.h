#pragma once
// What a session may reach: the profile, the allowed host names and ports,
// and the host loopback ports mapped to the gateway.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::egress {

/// permissive: any TCP destination (still through the proxy) and any name;
/// standard: the agent's model hosts + extra hosts + common developer hosts;
/// locked: the agent's model hosts only. --allow-host adds to each.
enum class Profile { kPermissive, kStandard, kLocked };

/// "permissive" | "standard" | "locked".
const char* profileName(Profile profile);

/// Parses a profile name (error: kUsage).
Result<Profile> parseProfile(std::string_view text);

/// One allowed DNS name: exact ("api.example.com") or a leftmost wildcard
/// ("*.example.com": any name below example.com, not example.com itself).
struct HostRule {
  std::string pattern;          ///< lower case, no trailing dot
  std::vector<uint16_t> ports;  ///< allowed TCP ports; empty = 80 and 443

  /// Whether `name` (any case, optional trailing dot) matches the pattern.
  bool matches(std::string_view name) const;
  /// Whether `port` is allowed for a matching name.
  bool allowsPort(uint16_t port) const;
};

/// Parses `host[:port]` (--allow-host, agent spec host lists): a DNS name,
/// `*.` only as the leftmost label, no IP literals. Errors carry kUsage.
Result<HostRule> parseHostRule(std::string_view text);

/// A TCP port on the host's loopback reachable from the guest at the
/// gateway address (--host-port PORT[:GUESTPORT]).
struct HostPort {
  uint16_t hostPort = 0;
  uint16_t guestPort = 0;
};

/// Parses `PORT[:GUESTPORT]` (GUESTPORT defaults to PORT). Errors carry kUsage.
Result<HostPort> parseHostPort(std::string_view text);

/// The developer hosts the standard profile adds (package registries,
/// GitHub, Docker Hub, GHCR, Debian/Ubuntu archives).
const std::vector<std::string>& standardDevHosts();

struct Policy {
  Profile profile = Profile::kStandard;
  std::vector<HostRule> hosts;
  std::vector<HostPort> hostPorts;
  bool log = false;  ///< stream the egress log to stderr (--egress-log)

  /// Whether a DNS name may be resolved (any name under permissive).
  bool allowsName(std::string_view name) const;
  /// Whether a TCP connection to `name`:`port` may be made.
  bool allowsConnection(std::string_view name, uint16_t port) const;
  /// The host port mapped to guest port `guestPort` at the gateway, or 0.
  uint16_t hostPortFor(uint16_t guestPort) const;
};

/// Builds the policy of a session: the profile's hosts (model hosts for
/// standard and locked, plus extra and developer hosts for standard) and the
/// --allow-host rules. Fails (kUsage) on a malformed host entry.
Result<Policy> buildPolicy(Profile profile, const std::vector<std::string>& modelHosts,
                           const std::vector<std::string>& extraHosts, const std::vector<std::string>& allowHosts,
                           std::vector<HostPort> hostPorts);

}  // namespace airlock::egress
