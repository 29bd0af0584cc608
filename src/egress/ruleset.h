#pragma once
// The nftables ruleset of a session namespace, as text for libnftables.
// Pure: the same inputs always give the same text (unit-tested verbatim).

#include <string>

#include "egress/policy.h"

namespace airlock::egress {

/// Renders table `inet airlock` for the session namespace:
///  - prerouting (priority raw), traffic entering from the guest's tap:
///    the metadata addresses (169.254.169.254, fd00:ec2::254) dropped first;
///    IPv6 neighbour discovery accepted; every TCP packet accepted (the NAT
///    chain hands it to the egress proxy); UDP accepted only to the DNS
///    proxy (gateway, port 53); ICMP, other UDP and anything else dropped,
///    each class with its own named counter; the guest's ICMP errors to the
///    gateway (a port unreachable for a DNS answer that came after its
///    resolver gave up) are dropped too, counted apart as housekeeping (not
///    a drop_ counter: no egress attempt to report);
///  - prerouting (priority dstnat): every guest TCP connection, IPv4 and
///    IPv6, redirected to the egress proxy port (original destination kept
///    in conntrack for SO_ORIGINAL_DST), except DNS over TCP to the gateway
///    (port 53 of kGatewayV4 / kGatewayV6: the DNS proxy); TCP port 53 to
///    any other address goes to the egress proxy like everything else;
///  - input (policy drop): only loopback, the proxy port and DNS (UDP, and
///    TCP to the gateway addresses) from the tap.
/// The namespace has no other interface and no route out; the proxies reach
/// the outside world from the host's namespace.
std::string renderRuleset(Profile profile);

/// Names of the drop counters, in the order renderRuleset declares them.
inline constexpr const char* kDropCounters[] = {"drop_metadata", "drop_icmp", "drop_udp", "drop_other", "drop_input"};

}  // namespace airlock::egress
