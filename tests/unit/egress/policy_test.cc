#include "egress/policy.h"

#include <gtest/gtest.h>

#include "common/exit_codes.h"

namespace airlock::egress {
namespace {

TEST(HostRuleTest, ExactNameMatchesAnyCaseAndTrailingDot) {
  auto rule = parseHostRule("API.Example.com");
  ASSERT_TRUE(rule) << rule.error().message;
  EXPECT_EQ(rule->pattern, "api.example.com");
  EXPECT_TRUE(rule->matches("api.example.com"));
  EXPECT_TRUE(rule->matches("api.EXAMPLE.com."));
  EXPECT_FALSE(rule->matches("example.com"));
  EXPECT_FALSE(rule->matches("evilapi.example.com"));
  EXPECT_FALSE(rule->matches("api.example.com.evil.net"));
}

TEST(HostRuleTest, WildcardMatchesOnlyNamesBelow) {
  auto rule = parseHostRule("*.example.com");
  ASSERT_TRUE(rule);
  EXPECT_TRUE(rule->matches("a.example.com"));
  EXPECT_TRUE(rule->matches("a.b.example.com"));
  EXPECT_FALSE(rule->matches("example.com"));
  EXPECT_FALSE(rule->matches("badexample.com"));
}

TEST(HostRuleTest, PortsDefaultToHttpAndHttps) {
  auto plain = parseHostRule("example.com");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->allowsPort(443));
  EXPECT_TRUE(plain->allowsPort(80));
  EXPECT_FALSE(plain->allowsPort(22));
  auto custom = parseHostRule("example.com:8443");
  ASSERT_TRUE(custom);
  EXPECT_TRUE(custom->allowsPort(8443));
  EXPECT_FALSE(custom->allowsPort(443));
}

TEST(HostRuleTest, RejectsLiteralsAndMalformedNames) {
  for (const char* bad : {"192.0.2.1", "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]:443", "a.*.example.com",
                          "*example.com", "localhost", "", "-a.example.com", "example.com:0", "example.com:70000",
                          "exa mple.com", "1.2.3"}) {
    auto rule = parseHostRule(bad);
    EXPECT_FALSE(rule) << bad;
    if (!rule) {
      EXPECT_EQ(rule.error().code, exit_code::kUsage) << bad;
    }
  }
}

TEST(HostPortTest, ParsesPortAndGuestPort) {
  auto same = parseHostPort("8080");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->hostPort, 8080);
  EXPECT_EQ(same->guestPort, 8080);
  auto mapped = parseHostPort("11434:8000");
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->hostPort, 11434);
  EXPECT_EQ(mapped->guestPort, 8000);
  EXPECT_FALSE(parseHostPort("x"));
  EXPECT_FALSE(parseHostPort("80:"));
  EXPECT_FALSE(parseHostPort("0"));
}

TEST(ProfileTest, ParsesTheThreeProfiles) {
  EXPECT_EQ(parseProfile("permissive").value(), Profile::kPermissive);
  EXPECT_EQ(parseProfile("standard").value(), Profile::kStandard);
  EXPECT_EQ(parseProfile("locked").value(), Profile::kLocked);
  EXPECT_EQ(parseProfile("open").error().code, exit_code::kUsage);
}

TEST(PolicyTest, ConnectionsNeedAMatchingNameAndPort) {
  Policy policy{Profile::kLocked, {*parseHostRule("api.anthropic.com"), *parseHostRule("*.corp.example:8443")}};
  EXPECT_TRUE(policy.allowsConnection("api.anthropic.com", 443));
  EXPECT_FALSE(policy.allowsConnection("api.anthropic.com", 22));
  EXPECT_FALSE(policy.allowsName("github.com"));
  EXPECT_TRUE(policy.allowsConnection("git.corp.example", 8443));
  EXPECT_FALSE(policy.allowsConnection("git.corp.example", 443));
}

TEST(PolicyTest, PermissiveAllowsAnything) {
  Policy policy{Profile::kPermissive};
  EXPECT_TRUE(policy.allowsName("anything.example.net"));
  EXPECT_TRUE(policy.allowsConnection("anything.example.net", 22));
}

TEST(PolicyTest, HostPortsMapGuestPortsOnly) {
  Policy policy{Profile::kLocked, {}, {{11434, 8000}}};
  EXPECT_EQ(policy.hostPortFor(8000), 11434);
  EXPECT_EQ(policy.hostPortFor(11434), 0);
}

}  // namespace
}  // namespace airlock::egress
