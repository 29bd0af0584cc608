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
/// locked: the agent's model hosts only. --allow-host adds to each. Ordered
/// widest first (a repo config may only move right). The host lists are
/// config::egressPlan's.
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

/// A pairing of a TCP port on the host's loopback and one in the guest:
/// --host-port (the guest reaches hostPort at gateway:guestPort) or
/// --publish (the host reaches guestPort at 127.0.0.1:hostPort).
struct HostPort {
  uint16_t hostPort = 0;
  uint16_t guestPort = 0;
};

/// Parses `PORT[:GUESTPORT]` (GUESTPORT defaults to PORT) given to `flag`
/// (--host-port, --publish). Errors carry kUsage and name the flag.
Result<HostPort> parseHostPort(std::string_view text, std::string_view flag = "--host-port");

struct Policy {
  Profile profile = Profile::kStandard;
  std::vector<HostRule> hosts;
  std::vector<HostPort> hostPorts;
  /// Names the host's credential broker reaches for the guest (the model
  /// API of a brokered login): the guest's lookups of them are answered
  /// NXDOMAIN like any name off the list, logged as brokered, and not
  /// counted as blocked (the agent's own start-up calls there are expected).
  std::vector<std::string> brokeredHosts;
  /// Names the agent asks who is logged in, which a brokered login's
  /// account file already tells it (Gemini's userinfo): NXDOMAIN, logged
  /// as not needed, and not counted as blocked.
  std::vector<std::string> accountHosts;
  bool log = false;  ///< stream the egress log to stderr (--egress-log)

  /// Whether a DNS name may be resolved (any name under permissive).
  bool allowsName(std::string_view name) const;
  /// Whether a TCP connection to `name`:`port` may be made.
  bool allowsConnection(std::string_view name, uint16_t port) const;
  /// The host port mapped to guest port `guestPort` at the gateway, or 0.
  uint16_t hostPortFor(uint16_t guestPort) const;
};

}  // namespace airlock::egress
