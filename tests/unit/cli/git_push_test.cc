// --git-token and --git-host: where the token comes from (never echoed),
// which hosts it is for, and what the plan gets: the broker at its gateway
// port and the guest's url rewrite, with no token anywhere in the guest's files.

#include "cli/git_push.h"

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "secrets/credential_broker.h"
#include "support/scratch.h"

namespace airlock::cli {
namespace {

class GitPush : public ::testing::Test {
 protected:
  void SetUp() override {
    host_.env["GH_TOKEN"] = "ghp_SECRET_VALUE_1234";
    host_.dirs.data = dir_.path() + "/data";
    host_.env["AIRLOCK_SECRET_STORE"] = "file";
  }
  TempDir dir_ = test::scratchDir("airlock-git-push-");
  HostContext host_;
};

TEST_F(GitPush, TheTokenComesFromAVariableAndErrorsNameTheFixNotTheToken) {
  auto token = readGitToken(host_, "env:GH_TOKEN");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "ghp_SECRET_VALUE_1234");
  for (const char* source : {"env:UNSET_VAR", "GH_TOKEN", "env:", "secret:", "file:/x", "secret:nothing-stored"}) {
    auto bad = readGitToken(host_, source);
    ASSERT_FALSE(bad) << source;
    EXPECT_EQ(bad.error().code, exit_code::kUsage) << source;
    EXPECT_EQ(bad.error().message.find("ghp_"), std::string::npos) << bad.error().message;
  }
  EXPECT_NE(readGitToken(host_, "env:UNSET_VAR").error().message.find("export it"), std::string::npos);
  EXPECT_NE(readGitToken(host_, "secret:nothing-stored").error().message.find("airlock secret set nothing-stored"),
            std::string::npos);
}

/// Settings as --git-token/--git-host (or git_token/git_hosts) leave them.
config::Settings withGit(const std::string& token, const std::vector<std::string>& hosts) {
  config::Settings s;
  if (!token.empty()) s.gitToken = config::Sourced<std::string>{token, config::Layer::kFlag};
  for (const auto& h : hosts) s.gitHosts.push_back({h, config::Layer::kFlag});
  return s;
}

TEST_F(GitPush, HostsDefaultToGithubAndMustBeHostNames) {
  EXPECT_TRUE(gitPushHosts(withGit("", {}))->empty()) << "nothing without a token";
  EXPECT_FALSE(gitPushHosts(withGit("", {"gitlab.com"}))) << "--git-host alone";
  EXPECT_EQ(*gitPushHosts(withGit("env:GH_TOKEN", {})), std::vector<std::string>{"github.com"});
  EXPECT_EQ(*gitPushHosts(withGit("env:GH_TOKEN", {"gitlab.com", "git.example.com:8443", "gitlab.com"})),
            (std::vector<std::string>{"git.example.com:8443", "gitlab.com"}));
  for (const char* bad :
       {"GitHub.com", "https://github.com", "github.com/o", "a..b", ".x", "x:0", "x:99999", "x:", "a b", "x/../y",
        "*.github.com", "192.0.2.1", "[::1]:22", "github.com:022"}) {
    auto hosts = gitPushHosts(withGit("env:GH_TOKEN", {bad}));
    ASSERT_FALSE(hosts) << bad;
    EXPECT_EQ(hosts.error().code, exit_code::kUsage);
  }
}

TEST_F(GitPush, ThePlanGetsTheBrokerAndTheRewriteButNoToken) {
  session::Plan plan;
  plan.homeFiles.push_back({".gitconfig", "[user]\n\tname = Ada\n"});
  ASSERT_TRUE(applyGitPush(host_, withGit("env:GH_TOKEN", {"github.com", "git.example.com:8443"}), "", plan));
  EXPECT_EQ(plan.machine.egressNetwork.gatewayServices.count(secrets::kGitBrokerPort), 1u);
  ASSERT_EQ(plan.homeFiles.size(), 1u);
  EXPECT_EQ(plan.homeFiles[0].content,
            "[user]\n\tname = Ada\n"
            "[url \"http://10.0.2.2:4181/git.example.com:8443/\"]\n\tinsteadOf = https://git.example.com:8443/\n"
            "[url \"http://10.0.2.2:4181/github.com/\"]\n\tinsteadOf = https://github.com/\n");
  for (const auto& f : plan.homeFiles) EXPECT_EQ(f.content.find("ghp_"), std::string::npos);
  session::Plan none;
  ASSERT_TRUE(applyGitPush(host_, withGit("", {}), "", none));
  EXPECT_TRUE(none.machine.egressNetwork.gatewayServices.empty());
  EXPECT_TRUE(none.homeFiles.empty());
}

TEST_F(GitPush, AHostPortOnTheBrokersPortIsRefused) {
  session::Plan plan;
  egress::Policy policy{};
  policy.hostPorts.push_back({secrets::kGitBrokerPort, secrets::kGitBrokerPort});
  plan.machine.egress = std::move(policy);
  auto r = applyGitPush(host_, withGit("env:GH_TOKEN", {}), "", plan);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage);
}

}  // namespace
}  // namespace airlock::cli
