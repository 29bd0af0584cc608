#include "egress/ruleset.h"

#include <gtest/gtest.h>

namespace airlock::egress {
namespace {

// The whole ruleset, verbatim: a change to the firewall must show up here.
const char* const kExpectedBody = R"(table inet airlock {
	counter drop_metadata { }
	counter drop_icmp { }
	counter drop_udp { }
	counter drop_other { }
	counter drop_input { }
	counter guest_ipv6_housekeeping { }
	counter guest_icmp_errors { }

	chain guard {
		type filter hook prerouting priority raw; policy accept;
		iifname != "airlock0" accept
		ip daddr 169.254.169.254 counter name drop_metadata drop
		ip6 daddr fd00:ec2::254 counter name drop_metadata drop
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept
		meta l4proto tcp accept
		ip daddr 10.0.2.2 udp dport 53 accept
		ip6 daddr fd00:a1::1 udp dport 53 accept
		icmpv6 type { nd-router-solicit, mld-listener-report, mld2-listener-report } counter name guest_ipv6_housekeeping drop
		ip daddr 10.0.2.2 icmp type { destination-unreachable, time-exceeded, parameter-problem } counter name guest_icmp_errors drop
		ip6 daddr fd00:a1::1 icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem } counter name guest_icmp_errors drop
		meta l4proto { icmp, ipv6-icmp } counter name drop_icmp drop
		meta l4proto udp counter name drop_udp drop
		counter name drop_other drop
	}

	chain to_proxy {
		type nat hook prerouting priority dstnat; policy accept;
		iifname "airlock0" ip daddr 10.0.2.2 tcp dport 53 accept
		iifname "airlock0" ip6 daddr fd00:a1::1 tcp dport 53 accept
		iifname "airlock0" meta l4proto tcp redirect to :15001
	}

	chain input {
		type filter hook input priority filter; policy drop;
		iifname "lo" accept
		ct state established,related accept
		iifname "airlock0" tcp dport 15001 accept
		iifname "airlock0" udp dport 53 accept
		iifname "airlock0" ip daddr 10.0.2.2 tcp dport 53 accept
		iifname "airlock0" ip6 daddr fd00:a1::1 tcp dport 53 accept
		iifname "airlock0" icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept
		counter name drop_input drop
	}

	chain forward {
		type filter hook forward priority filter; policy drop;
		counter name drop_other drop
	}
}
)";

TEST(RulesetTest, ExactTextPerProfile) {
  for (Profile p : {Profile::kPermissive, Profile::kStandard, Profile::kLocked}) {
    std::string expected = std::string("# airlock egress firewall, profile ") + profileName(p) + "\n" + kExpectedBody;
    EXPECT_EQ(renderRuleset(p), expected) << profileName(p);
  }
}

TEST(RulesetTest, DeclaresEveryDropCounter) {
  std::string text = renderRuleset(Profile::kStandard);
  for (const char* counter : kDropCounters)
    EXPECT_NE(text.find(std::string("counter ") + counter + " { }"), std::string::npos) << counter;
}

}  // namespace
}  // namespace airlock::egress
