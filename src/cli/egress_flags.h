#pragma once
// The egress flags `airlock run` and `airlock run-image` share
// (--egress-profile, --allow-host, --host-port, --egress-log), and the
// end-of-session report of what the firewall blocked.

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "egress/policy.h"
#include "egress/session_network.h"

namespace airlock::cli {

/// Raw values of the egress flags.
struct EgressFlags {
  std::string profile;                  ///< "" = the configured/default profile
  std::vector<std::string> allowHosts;  ///< HOST[:PORT], '*.' only leftmost
  std::vector<std::string> hostPorts;   ///< PORT[:GUESTPORT]
  std::vector<std::string> publish;     ///< HOSTPORT[:GUESTPORT]
  bool log = false;                     ///< stream the egress log to stderr
};

/// Adds the flags (and --publish) to `cmd`, storing into `flags`.
/// `defaultProfile` is named in the help text.
void addEgressFlags(CLI::App& cmd, EgressFlags& flags, const std::string& defaultProfile);

/// Checks every --allow-host value with egress::parseHostRule (a DNS name,
/// '*.' only leftmost, no IP literals, port 1-65535), whatever the profile.
Result<> checkAllowHosts(const EgressFlags& flags);

/// The guest's network for `run-image` (and an image's build VM): none
/// (nullopt) unless an egress flag (or --publish) is given; then the egress
/// firewall with --egress-profile (default locked: only the --allow-host
/// hosts). kUsage errors name a bad value.
Result<std::optional<egress::Policy>> imagePolicy(const EgressFlags& flags);

/// Parses every PORT[:GUESTPORT] value of `flag` (kUsage errors name the bad value).
Result<std::vector<egress::HostPort>> parseHostPorts(const std::vector<std::string>& values,
                                                    std::string_view flag = "--host-port");

/// Prints what the session's firewall blocked (names, addresses, drop
/// counters) to stderr, one line each; nothing when nothing was blocked.
/// `details` says where the full log is (a file, or "shown above").
void reportBlocked(const egress::SessionNetwork& network, const std::string& details);

}  // namespace airlock::cli
