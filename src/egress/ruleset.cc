#include "egress/ruleset.h"

#include <fmt/format.h>

#include "egress/addresses.h"

namespace airlock::egress {

std::string renderRuleset(Profile profile) {
  return fmt::format(R"(# airlock egress firewall, profile {profile}
table inet airlock {{
	counter drop_metadata {{ }}
	counter drop_icmp {{ }}
	counter drop_udp {{ }}
	counter drop_other {{ }}
	counter drop_input {{ }}
	counter guest_ipv6_housekeeping {{ }}
	counter guest_icmp_errors {{ }}

	chain guard {{
		type filter hook prerouting priority raw; policy accept;
		iifname != "{tap}" accept
		ip daddr 169.254.169.254 counter name drop_metadata drop
		ip6 daddr fd00:ec2::254 counter name drop_metadata drop
		icmpv6 type {{ nd-neighbor-solicit, nd-neighbor-advert }} ip6 hoplimit 255 accept
		meta l4proto tcp accept
		ip daddr {gw4} udp dport {dns} accept
		ip6 daddr {gw6} udp dport {dns} accept
		icmpv6 type {{ nd-router-solicit, mld-listener-report, mld2-listener-report }} counter name guest_ipv6_housekeeping drop
		ip daddr {gw4} icmp type {{ destination-unreachable, time-exceeded, parameter-problem }} counter name guest_icmp_errors drop
		ip6 daddr {gw6} icmpv6 type {{ destination-unreachable, packet-too-big, time-exceeded, parameter-problem }} counter name guest_icmp_errors drop
		meta l4proto {{ icmp, ipv6-icmp }} counter name drop_icmp drop
		meta l4proto udp counter name drop_udp drop
		counter name drop_other drop
	}}

	chain to_proxy {{
		type nat hook prerouting priority dstnat; policy accept;
		iifname "{tap}" ip daddr {gw4} tcp dport {dns} accept
		iifname "{tap}" ip6 daddr {gw6} tcp dport {dns} accept
		iifname "{tap}" meta l4proto tcp redirect to :{proxy}
	}}

	chain input {{
		type filter hook input priority filter; policy drop;
		iifname "lo" accept
		ct state established,related accept
		iifname "{tap}" tcp dport {proxy} accept
		iifname "{tap}" udp dport {dns} accept
		iifname "{tap}" ip daddr {gw4} tcp dport {dns} accept
		iifname "{tap}" ip6 daddr {gw6} tcp dport {dns} accept
		iifname "{tap}" icmpv6 type {{ nd-neighbor-solicit, nd-neighbor-advert }} ip6 hoplimit 255 accept
		counter name drop_input drop
	}}

	chain forward {{
		type filter hook forward priority filter; policy drop;
		counter name drop_other drop
	}}
}}
)",
                     fmt::arg("profile", profileName(profile)), fmt::arg("tap", kTapName), fmt::arg("gw4", kGatewayV4),
                     fmt::arg("gw6", kGatewayV6), fmt::arg("dns", kDnsPort), fmt::arg("proxy", kProxyPort));
}

}  // namespace airlock::egress
