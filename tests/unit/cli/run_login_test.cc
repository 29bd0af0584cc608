// The login a run uses (cli/run_login.h): with a login stored, the agent's
// environment, home files, egress and gateway get what a brokered run
// needs, and nothing of the real token.

#include "cli/run_login.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "agents/agent_env.h"
#include "agents/registry.h"
#include "agents/spec_parser.h"
#include "cli/expiry.h"
#include "common/exit_codes.h"
#include "egress/policy.h"

namespace airlock::cli {
namespace {

namespace fs = std::filesystem;

class RunLoginTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-run-login-XXXXXX";
    dir_ = mkdtemp(tmpl);
    host_.dirs.data = dir_ + "/data";
    host_.dirs.config = dir_ + "/config";
    host_.env = {{"AIRLOCK_SECRET_STORE", "file"}, {"HOME", dir_}};
    host_.clock = &clock_;
    auto registry = agents::AgentRegistry::builtin();
    ASSERT_TRUE(registry);
    spec_ = *registry->find("claude-code");
  }
  void TearDown() override { fs::remove_all(dir_); }
  /// Stores `login` as airlock login would.
  void store(const secrets::AgentLogin& login, const std::string& agent = "claude-code",
             std::optional<int64_t> expiresAt = std::nullopt) {
    HostSecrets secrets(host_, true);
    std::string note;
    ASSERT_TRUE(
        secrets.store().set(secrets::loginSecretName(agent), secrets::serializeLogin(login), "test", expiresAt, note));
  }
  int64_t now() const { return nowSeconds(host_); }
  static secrets::AgentLogin subscription() {
    secrets::AgentLogin login;
    login.kind = secrets::AgentLogin::Kind::kSubscription;
    login.format = "claude-oauth";
    login.accessToken = "sk-ant-oat01-REAL-ACCESS";
    login.refreshToken = "sk-ant-ort01-REAL-REFRESH";
    login.expiresAtMs = 4102444800000;  // not due for refresh: nothing is contacted
    login.scopes = {"user:inference"};
    login.subscriptionType = "max";
    login.accountJson = R"({"emailAddress":"user@example.com"})";
    return login;
  }
  std::string dir_;
  SystemClock clock_;
  HostContext host_;
  agents::AgentSpec spec_;
};

// `airlock login` on a machine where airlock never ran: the login's lock
// is taken where the data directory does not exist yet.
TEST_F(RunLoginTest, TheLoginsLockMakesItsDirectory) {
  ASSERT_FALSE(std::filesystem::exists(host_.dirs.data));
  auto lock = lockLogin(host_, "claude-code");
  ASSERT_TRUE(lock) << lock.error().message;
  EXPECT_TRUE(std::filesystem::exists(loginLockPath(host_, "claude-code")));
}

TEST(RunLogin, NamesVariableMatchesNameOrAssignmentOnly) {
  EXPECT_TRUE(namesVariable({"ANTHROPIC_API_KEY"}, "ANTHROPIC_API_KEY"));
  EXPECT_TRUE(namesVariable({"X=1", "ANTHROPIC_API_KEY=sk"}, "ANTHROPIC_API_KEY"));
  EXPECT_FALSE(namesVariable({"ANTHROPIC_API_KEY_2"}, "ANTHROPIC_API_KEY"));
  EXPECT_FALSE(namesVariable({"ANTHROPIC_API"}, "ANTHROPIC_API_KEY"));
}

TEST_F(RunLoginTest, NoLoginStoredMeansApiKeysByValue) {
  auto login = RunLogin::open(host_, spec_, {});
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(*login, nullptr);
  auto info = loginForRun(host_, spec_, {});
  ASSERT_TRUE(info);
  EXPECT_FALSE(*info);
}

TEST_F(RunLoginTest, ABrokeredRunGetsPlaceholdersTheBrokerAndNoModelHost) {
  store(subscription());
  auto info = loginForRun(host_, spec_, {});
  ASSERT_TRUE(info && *info);
  EXPECT_EQ((*info)->name, "login.claude-code");
  auto login = RunLogin::open(host_, spec_, {});
  ASSERT_TRUE(login) << login.error().message;
  ASSERT_NE(*login, nullptr);
  EXPECT_EQ((*login)->describe(), "subscription (max)");

  agents::AgentSpec run = withLogin(spec_, {});
  EXPECT_TRUE(run.egress.modelHosts.empty());
  EXPECT_EQ(std::count(run.envForward.begin(), run.envForward.end(), "ANTHROPIC_API_KEY"), 0);
  EXPECT_EQ(std::count(run.envForward.begin(), run.envForward.end(), "CLAUDE_*"), 1);

  agents::EnvMap env = {{"ANTHROPIC_API_KEY", "sk-ant-api03-billed"},
                        {"ANTHROPIC_BASE_URL", "https://elsewhere.example"},
                        {"CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-from-host-env"}};
  (*login)->applyToEnvironment(env, {});
  EXPECT_EQ(env.count("ANTHROPIC_API_KEY"), 0u);
  EXPECT_EQ(env.count("CLAUDE_CODE_OAUTH_TOKEN"), 0u);  // a subscription goes in as the file
  EXPECT_EQ(env.at("ANTHROPIC_BASE_URL"), "http://10.0.2.2:4180");

  session::Plan plan;
  plan.seedFiles.push_back({".claude.json", R"({"hasCompletedOnboarding":true})"});
  ASSERT_TRUE((*login)->applyToPlan(plan));
  ASSERT_EQ(plan.homeFiles.size(), 1u);
  EXPECT_EQ(plan.homeFiles[0].path, ".claude/.credentials.json");
  EXPECT_NE(plan.homeFiles[0].content.find("sk-ant-oat01-airlock-placeholder"), std::string::npos);
  for (const auto& f : plan.homeFiles) EXPECT_EQ(f.content.find("REAL"), std::string::npos) << f.content;
  for (const auto& f : plan.seedFiles) EXPECT_EQ(f.content.find("REAL"), std::string::npos) << f.content;
  ASSERT_EQ(plan.seedFiles.size(), 1u);
  EXPECT_NE(plan.seedFiles[0].content.find(R"("hasCompletedOnboarding":true)"), std::string::npos);
  EXPECT_NE(plan.seedFiles[0].content.find(R"("oauthAccount":{"emailAddress":"user@example.com"})"), std::string::npos);
  EXPECT_EQ(plan.machine.egressNetwork.gatewayServices.count(secrets::kBrokerPort), 1u);
}

TEST_F(RunLoginTest, NamingTheApiKeyUsesItInsteadOfTheLogin) {
  store(subscription());
  auto login = RunLogin::open(host_, spec_, {"ANTHROPIC_API_KEY"});
  ASSERT_TRUE(login);
  EXPECT_EQ(*login, nullptr);
  agents::AgentSpec run = withLogin(spec_, {"ANTHROPIC_API_KEY"});
  EXPECT_EQ(std::count(run.envForward.begin(), run.envForward.end(), "ANTHROPIC_API_KEY"), 1);
}

TEST_F(RunLoginTest, ALongLivedTokenGoesInAsItsVariablesPlaceholder) {
  auto token = secrets::loginFromToken("claude-oauth", "sk-ant-oat01-REAL-LONG-LIVED");
  ASSERT_TRUE(token);
  store(*token);
  auto login = RunLogin::open(host_, spec_, {});
  ASSERT_TRUE(login && *login);
  agents::EnvMap env;
  (*login)->applyToEnvironment(env, {});
  EXPECT_EQ(env.at("CLAUDE_CODE_OAUTH_TOKEN"), "sk-ant-oat01-airlock-placeholder");
  session::Plan plan;
  ASSERT_TRUE((*login)->applyToPlan(plan));
  EXPECT_TRUE(plan.homeFiles.empty());
}

// `airlock login --expires`: a run warns in the last week and refuses a
// token past its end before a VM boots for nothing.
TEST_F(RunLoginTest, ATokensStatedEndIsWarnedOfAWeekBeforeAndRefusedAfter) {
  auto token = secrets::loginFromToken("claude-oauth", "sk-ant-oat01-REAL-LONG-LIVED");
  ASSERT_TRUE(token);
  store(*token, "claude-code", now() + 30 * 24 * 3600);
  auto far = RunLogin::open(host_, spec_, {});
  ASSERT_TRUE(far && *far);
  EXPECT_EQ((*far)->expiryWarning(), "");
  store(*token, "claude-code", now() + 3 * 24 * 3600 + 60);
  auto soon = RunLogin::open(host_, spec_, {});
  ASSERT_TRUE(soon && *soon);
  EXPECT_EQ((*soon)->expiryWarning(),
            "your claude-code login expires in 3 days: store a new token with `airlock login claude-code --with-token`");
  store(*token, "claude-code", now() - 60);
  auto past = RunLogin::open(host_, spec_, {});
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code, exit_code::kHostNotReady);
  EXPECT_NE(past.error().message.find("expired"), std::string::npos) << past.error().message;
  EXPECT_NE(past.error().message.find("airlock login claude-code"), std::string::npos) << past.error().message;
  EXPECT_EQ(past.error().message.find("REAL"), std::string::npos);
}

TEST_F(RunLoginTest, AGoogleLoginGivesGeminiCodeAssistAtTheBrokerAndAPlaceholderToken) {
  auto registry = agents::AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  agents::AgentSpec gemini = *registry->find("gemini");
  auto creds = secrets::loginFromCredentialFile(
      "gemini-oauth",
      R"({"access_token":"ya29.REAL-ACCESS","refresh_token":"1//REAL-REFRESH","expiry_date":4102444800000})");
  ASSERT_TRUE(creds) << creds.error().message;
  creds->accountJson = R"({"active":"user@example.com"})";
  store(*creds, "gemini");
  auto login = RunLogin::open(host_, gemini, {});
  ASSERT_TRUE(login) << login.error().message;
  ASSERT_NE(*login, nullptr);

  // Google's login, not the API key, in Gemini's own settings; the API key is not forwarded.
  agents::AgentSpec run = withLogin(gemini, {});
  EXPECT_EQ(run.env.at("GOOGLE_GENAI_USE_GCA"), "true");
  EXPECT_NE(run.homeFiles.at(".gemini/settings.json").find(R"("selectedType": "oauth-personal")"), std::string::npos);
  EXPECT_EQ(std::count(run.envForward.begin(), run.envForward.end(), "GEMINI_API_KEY"), 0);
  EXPECT_EQ(brokeredHosts(gemini),
            (std::vector<std::string>{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com"}));

  agents::EnvMap env = {{"GEMINI_API_KEY", "AIza-billed"}, {"GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.from-host-env"}};
  (*login)->applyToEnvironment(env, {});
  EXPECT_EQ(env.count("GEMINI_API_KEY"), 0u);
  EXPECT_EQ(env.at("GOOGLE_CLOUD_ACCESS_TOKEN"), "airlock-placeholder");
  EXPECT_EQ(env.at("CODE_ASSIST_ENDPOINT"), "http://10.0.2.2:4180");

  // No credential file in the guest (Gemini would refresh from it); the account as Gemini caches it.
  session::Plan plan;
  ASSERT_TRUE((*login)->applyToPlan(plan));
  EXPECT_TRUE(plan.homeFiles.empty());
  ASSERT_EQ(plan.seedFiles.size(), 1u);
  EXPECT_EQ(plan.seedFiles[0].path, ".gemini/google_accounts.json");
  EXPECT_EQ(plan.seedFiles[0].content, R"({"active":"user@example.com"})");
  EXPECT_EQ(plan.machine.egressNetwork.gatewayServices.count(secrets::kBrokerPort), 1u);
}

TEST_F(RunLoginTest, AChatGptLoginGivesCodexTheBrokerOverHttpAndHttpsUnderASessionCa) {
  auto registry = agents::AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  agents::AgentSpec codex = *registry->find("codex");
  secrets::AgentLogin chatgpt;
  chatgpt.kind = secrets::AgentLogin::Kind::kSubscription;
  chatgpt.format = "codex-oauth";
  chatgpt.accessToken = "eyJ.REAL-ACCESS.x";
  chatgpt.refreshToken = "rt_REAL-REFRESH";
  chatgpt.expiresAtMs = 4102444800000;
  chatgpt.subscriptionType = "pro";
  chatgpt.accountJson = R"({"account_id":"acct-1","auth":{"chatgpt_plan_type":"pro"}})";
  store(chatgpt, "codex");
  auto login = RunLogin::open(host_, codex, {});
  ASSERT_TRUE(login) << login.error().message;
  ASSERT_NE(*login, nullptr);

  // chatgpt.com is the broker's to reach, not the guest's.
  agents::AgentSpec run = withLogin(codex, {});
  EXPECT_TRUE(run.egress.modelHosts.empty());
  EXPECT_EQ(std::count(run.egress.extraHosts.begin(), run.egress.extraHosts.end(), "chatgpt.com"), 0);
  EXPECT_NE(run.homeFiles.at(".codex/config.toml").find("requires_openai_auth = true"), std::string::npos);

  agents::EnvMap env = {{"CODEX_API_KEY", "sk-billed"}, {"OPENAI_API_KEY", "sk-billed"}};
  (*login)->applyToEnvironment(env, {});
  EXPECT_EQ(env.count("CODEX_API_KEY"), 0u);
  EXPECT_EQ(env.count("OPENAI_API_KEY"), 0u);
  EXPECT_EQ(env.at("OPENAI_BASE_URL"), "http://10.0.2.2:4180");
  EXPECT_EQ(env.at("AIRLOCK_BROKER_TLS_URL"), "https://10.0.2.2:4182");
  EXPECT_EQ(env.at("CODEX_CA_CERTIFICATE"), "/home/agent/.airlock/broker-ca.pem");
  auto files = agents::expandFiles(run.homeFiles, env);
  EXPECT_NE(files.at(".codex/config.toml").find(R"(chatgpt_base_url = "https://10.0.2.2:4182/backend-api/")"),
            std::string::npos);

  session::Plan plan;
  ASSERT_TRUE((*login)->applyToPlan(plan));
  std::map<std::string, std::string> home;
  for (const auto& f : plan.homeFiles) home[f.path] = f.content;
  ASSERT_EQ(home.count(".codex/auth.json"), 1u);
  EXPECT_EQ(home[".codex/auth.json"].find("REAL"), std::string::npos);
  EXPECT_NE(home[".airlock/broker-ca.pem"].find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(plan.machine.egressNetwork.gatewayServices.count(secrets::kBrokerPort), 1u);
  EXPECT_EQ(plan.machine.egressNetwork.gatewayServices.count(secrets::kBrokerTlsPort), 1u);

  // Its HTTPS port is the broker's too.
  session::Plan taken;
  taken.machine.egress = egress::Policy{};
  taken.machine.egress->hostPorts.push_back({8443, secrets::kBrokerTlsPort});
  auto r = (*login)->applyToPlan(taken);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--host-port 4182"), std::string::npos) << r.error().message;
}

// Issue 15, item 4, custom agents: a `token` login (a long-lived token
// typed in) enters the VM as its variable's value, by value like a
// forwarded key; nothing goes in a file, no broker runs, and the agent
// reaches the login's hosts.
TEST_F(RunLoginTest, ACustomAgentsTokenLoginEntersTheVmInItsVariable) {
  auto spec = agents::parseAgentSpec(R"(name: acme
description: An in-house agent
image: registry.example.com/acme:1
command: [acme]
env_forward: [ACME_API_KEY]
login:
  format: token
  delivery: vm
  token_env: ACME_TOKEN
  hosts: [api.acme.example]
  billing_env: [ACME_API_KEY]
)",
                                     "acme.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  auto token = secrets::loginFromToken("token", "acme-REAL-TOKEN-0123456789\n");
  ASSERT_TRUE(token) << token.error().message;
  store(*token, "acme");
  auto login = RunLogin::open(host_, *spec, {});
  ASSERT_TRUE(login) << login.error().message;
  ASSERT_NE(*login, nullptr);
  EXPECT_TRUE((*login)->entersVm());
  EXPECT_EQ((*login)->delivery(), "as $ACME_TOKEN");
  agents::AgentSpec run = withLogin(*spec, {});
  EXPECT_EQ(run.egress.modelHosts, std::vector<std::string>{"api.acme.example"});
  agents::EnvMap env = {{"ACME_API_KEY", "billed"}};
  (*login)->applyToEnvironment(env, {});
  EXPECT_EQ(env, (agents::EnvMap{{"ACME_TOKEN", "acme-REAL-TOKEN-0123456789"}}));
  session::Plan plan;
  ASSERT_TRUE((*login)->applyToPlan(plan));
  EXPECT_FALSE(plan.credential);
  EXPECT_TRUE(plan.homeFiles.empty());
  // A token has no file to import or to read back.
  EXPECT_FALSE(secrets::loginFromCredentialFile("token", "{}"));
}

// Issue 15, item 4: OpenCode's ChatGPT login cannot be brokered. Its
// real file goes into the plan (the runner puts it on a tmpfs), the guest
// may reach the login's hosts under every profile, no broker runs, and
// what comes back replaces the stored login only when it was refreshed.
TEST_F(RunLoginTest, OpenCodesChatGptLoginEntersTheVmAndComesBackRefreshed) {
  auto registry = agents::AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  agents::AgentSpec opencode = *registry->find("opencode");
  ASSERT_TRUE(opencode.login.entersVm);
  auto imported = secrets::loginFromCredentialFile(
      "opencode-oauth",
      R"({"openai":{"type":"oauth","refresh":"rt_REAL","access":"REAL-ACCESS","expires":1000,"accountId":"acct-1"}})");
  ASSERT_TRUE(imported);
  store(*imported, "opencode");
  auto login = RunLogin::open(host_, opencode, {});
  ASSERT_TRUE(login) << login.error().message;  // expired, yet no refresh on the host: OpenCode refreshes
  ASSERT_NE(*login, nullptr);
  EXPECT_TRUE((*login)->entersVm());
  EXPECT_TRUE(brokeredHosts(opencode).empty());

  agents::AgentSpec run = withLogin(opencode, {});
  EXPECT_EQ(run.egress.modelHosts, (std::vector<std::string>{"chatgpt.com", "auth.openai.com"}));
  EXPECT_NE(run.homeFiles.at(".config/opencode/opencode.json").find("\"openai/"), std::string::npos);
  EXPECT_EQ(std::count(run.envForward.begin(), run.envForward.end(), "OPENAI_API_KEY"), 0);

  agents::EnvMap env = {{"OPENAI_API_KEY", "sk-billed"}};
  (*login)->applyToEnvironment(env, {});
  EXPECT_TRUE(env.empty());  // no key, no broker URL

  session::Plan plan;
  ASSERT_TRUE((*login)->applyToPlan(plan));
  EXPECT_TRUE(plan.machine.egressNetwork.gatewayServices.empty());
  EXPECT_TRUE(plan.homeFiles.empty());
  ASSERT_TRUE(plan.credential);
  EXPECT_EQ(plan.credential->path, ".local/share/opencode/auth.json");
  ASSERT_TRUE(plan.credential->content);
  EXPECT_NE(plan.credential->content->find("rt_REAL"), std::string::npos);

  auto stored = [&] {
    HostSecrets secrets(host_, false);
    auto value = secrets.store().get(secrets::loginSecretName("opencode"));
    return value && *value ? **value : std::string();
  };
  // Unchanged: nothing stored; refreshed: stored.
  auto same = plan.credential->returned(*plan.credential->content, "");
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_FALSE(*same);
  auto refreshed = plan.credential->returned(
      R"({"openai":{"type":"oauth","refresh":"rt_NEW","access":"NEW-ACCESS","expires":5000,"accountId":"acct-1"}})",
      "");
  ASSERT_TRUE(refreshed) << refreshed.error().message;
  EXPECT_TRUE(*refreshed);
  EXPECT_NE(stored().find("rt_NEW"), std::string::npos);
  EXPECT_EQ(stored().find("rt_REAL"), std::string::npos);
}

TEST_F(RunLoginTest, ALoginOfAnotherFormatIsNeverSentToThisSpecsUpstream) {
  auto registry = agents::AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  store(subscription(), "gemini");  // a Claude login stored under gemini's name
  auto login = RunLogin::open(host_, *registry->find("gemini"), {});
  ASSERT_FALSE(login);
  EXPECT_NE(login.error().message.find("airlock login gemini"), std::string::npos) << login.error().message;
}

TEST_F(RunLoginTest, AHostPortOnTheBrokersPortIsRefused) {
  store(subscription());
  auto login = RunLogin::open(host_, spec_, {});
  ASSERT_TRUE(login && *login);
  session::Plan plan;
  plan.machine.egress = egress::Policy{};
  plan.machine.egress->hostPorts.push_back({8080, secrets::kBrokerPort});
  auto r = (*login)->applyToPlan(plan);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--host-port 4180"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().code, 64);
}

}  // namespace
}  // namespace airlock::cli
