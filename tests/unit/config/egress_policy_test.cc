// The plan -> policy step: what `airlock run` hands the egress firewall for
// each profile, with allow_hosts, remove_hosts and host ports.

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "config/egress_plan.h"

namespace airlock::config {
namespace {

agents::AgentSpec agentWithHosts() {
  agents::AgentSpec spec;
  spec.name = "test-agent";
  spec.egress.modelHosts = {"api.anthropic.com"};
  spec.egress.extraHosts = {"extra.example.com"};
  return spec;
}

Settings settingsFor(EgressProfile profile, std::vector<std::string> allow = {}, std::vector<std::string> remove = {}) {
  Settings s;
  s.egressProfile = {profile, Layer::kFlag};
  for (auto& h : allow) s.allowHosts.push_back({h, Layer::kFlag});
  for (auto& h : remove) s.removeHosts.push_back({h, Layer::kUser});
  return s;
}

TEST(EgressPolicyTest, LockedAllowsTheModelApiAndAllowHostsOnly) {
  auto policy = egressPolicy(egressPlan(agentWithHosts(), settingsFor(EgressProfile::kLocked, {"*.corp.example:8443"})), {});
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_EQ(policy->profile, EgressProfile::kLocked);
  EXPECT_TRUE(policy->allowsConnection("api.anthropic.com", 443));
  EXPECT_FALSE(policy->allowsConnection("api.anthropic.com", 80));
  EXPECT_FALSE(policy->allowsName("extra.example.com"));
  EXPECT_FALSE(policy->allowsName("github.com"));
  EXPECT_TRUE(policy->allowsConnection("git.corp.example", 8443));
  EXPECT_FALSE(policy->allowsConnection("git.corp.example", 443));
  EXPECT_FALSE(policy->allowsName("corp.example"));
}

TEST(EgressPolicyTest, StandardAddsDeveloperAndExtraHostsMinusRemoved) {
  auto policy = egressPolicy(
      egressPlan(agentWithHosts(), settingsFor(EgressProfile::kStandard, {}, {"registry.npmjs.org"})), {});
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_TRUE(policy->allowsConnection("api.anthropic.com", 443));
  EXPECT_TRUE(policy->allowsConnection("extra.example.com", 443));
  for (const auto& host : commonDeveloperHosts()) {
    if (host != "registry.npmjs.org") {
      EXPECT_TRUE(policy->allowsConnection(host, 443)) << host;
    }
  }
  EXPECT_FALSE(policy->allowsName("registry.npmjs.org"));
  EXPECT_FALSE(policy->allowsName("evil.example.net"));
}

// --git-ssh-agent opens port 22 of the git hosts (by name, whatever port
// the HTTPS side names) and nothing else; remove_hosts still closes one.
TEST(EgressPolicyTest, TheSshAgentOpensPort22OfTheGitHostsOnly) {
  Settings s = settingsFor(EgressProfile::kLocked);
  s.gitSshAgent = {true, Layer::kFlag};
  auto plan = egressPlan(agentWithHosts(), s);
  auto policy = egressPolicy(plan, {});
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_TRUE(policy->allowsConnection("github.com", 22)) << "the default git host";
  EXPECT_FALSE(policy->allowsConnection("github.com", 443)) << "locked: HTTPS to github.com stays closed";
  EXPECT_FALSE(policy->allowsConnection("api.anthropic.com", 22));
  EXPECT_EQ(plan.hosts.back().why, "git_ssh_agent");
  s = settingsFor(EgressProfile::kStandard, {}, {"gitlab.com"});
  s.gitSshAgent = {true, Layer::kUser};
  s.gitHosts = {{"git.example.com:8443", Layer::kFlag}, {"gitlab.com", Layer::kUser}};
  policy = egressPolicy(egressPlan(agentWithHosts(), s), {});
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_TRUE(policy->allowsConnection("git.example.com", 22));
  EXPECT_FALSE(policy->allowsConnection("github.com", 22)) << "not a git host here";
  EXPECT_TRUE(policy->allowsConnection("github.com", 443));
  EXPECT_FALSE(policy->allowsName("gitlab.com")) << "remove_hosts wins";
  s.gitHosts = {{"github.com", Layer::kFlag}};
  auto standard = egressPlan(agentWithHosts(), s);
  auto ssh = std::find_if(standard.hosts.begin(), standard.hosts.end(),
                          [](const AllowedHost& h) { return h.host == "github.com" && h.why == "git_ssh_agent"; });
  ASSERT_NE(ssh, standard.hosts.end()) << "port 22 is listed on its own, with its reason, beside github.com:443";
  EXPECT_EQ(ssh->ports, std::vector<unsigned>{22});
  s.gitSshAgent = {false, Layer::kBuiltin};
  EXPECT_FALSE(egressPolicy(egressPlan(agentWithHosts(), s), {})->allowsConnection("git.example.com", 22));
}

TEST(EgressPolicyTest, PermissiveAllowsAnyNameAndPortAndKeepsHostPorts) {
  auto policy = egressPolicy(egressPlan(agentWithHosts(), settingsFor(EgressProfile::kPermissive)), {{11434, 8000}});
  ASSERT_TRUE(policy);
  EXPECT_TRUE(policy->allowsConnection("anything.example.net", 22));
  EXPECT_EQ(policy->hostPortFor(8000), 11434);
}

TEST(EgressPolicyTest, AnIpLiteralInTheAgentSpecFailsTheRun) {
  auto spec = agentWithHosts();
  spec.egress.modelHosts = {"192.0.2.1"};
  auto policy = egressPolicy(egressPlan(spec, settingsFor(EgressProfile::kLocked)), {});
  ASSERT_FALSE(policy);
  EXPECT_EQ(policy.error().code, exit_code::kUsage);
}

}  // namespace
}  // namespace airlock::config
