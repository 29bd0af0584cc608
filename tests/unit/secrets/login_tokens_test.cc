#include "secrets/login_tokens.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "common/paths.h"
#include "secrets/file_backend.h"
#include "support/scratch.h"

namespace airlock::secrets {
namespace {

using nlohmann::json;

constexpr const char* kAgent = "claude-code";
constexpr const char* kUrl = "https://platform.example/v1/oauth/token";
constexpr const char* kClientId = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
constexpr int64_t kNowMs = 1'800'000'000'000;

class FixedClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override { return at; }
  std::chrono::system_clock::time_point at{std::chrono::milliseconds(kNowMs)};
};

/// The token endpoint: records each POST and answers what the test set.
class FakeEndpoint {
 public:
  struct Call {
    std::string url;
    json body;  ///< a JSON body as JSON, a form body as a JSON string
    std::string contentType;
  };
  HttpPoster poster() {
    return [this](const std::string& url, const RefreshRequest& request) -> Result<std::pair<long, std::string>> {
      std::optional<std::pair<long, std::string>> answer;
      {
        std::lock_guard guard(mutex_);
        json body = request.contentType == "application/json" ? json::parse(request.body, nullptr, false)
                                                              : json(request.body);
        calls_.push_back({url, body, request.contentType});
        answer = answer_;
      }
      if (delay.count()) std::this_thread::sleep_for(delay);
      if (!answer) return fail("Could not resolve host: platform.example");
      return *answer;
    };
  }
  void answer(long status, const json& body) {
    std::lock_guard guard(mutex_);
    answer_ = std::pair{status, body.dump()};
  }
  void answerText(long status, std::string body) {
    std::lock_guard guard(mutex_);
    answer_ = std::pair{status, std::move(body)};
  }
  void unreachable() {
    std::lock_guard guard(mutex_);
    answer_.reset();
  }
  std::vector<Call> calls() {
    std::lock_guard guard(mutex_);
    return calls_;
  }
  std::chrono::milliseconds delay{0};

 private:
  std::mutex mutex_;
  std::vector<Call> calls_;
  std::optional<std::pair<long, std::string>> answer_;
};

class LoginTokensTest : public ::testing::Test {
 protected:
  LoginTokensTest() : dir_(test::scratchDir("airlock-login-tokens-")), file_(dir_.path() + "/data/secrets") {}

  SecretStore store() { return SecretStore(dir_.path() + "/data/secrets.json", {{"file", &file_}}, file_, clock_); }

  /// The login another session (or `airlock login`) stored.
  void put(const AgentLogin& login) {
    auto s = store();
    std::string note;
    auto r = s.set(loginSecretName(kAgent), serializeLogin(login), "test", std::nullopt, note);
    ASSERT_TRUE(r) << r.error().message;
  }
  AgentLogin stored() {
    auto s = store();
    auto value = s.get(loginSecretName(kAgent));
    EXPECT_TRUE(value && *value);
    auto login = parseLogin(value && *value ? **value : "");
    EXPECT_TRUE(login);
    return login ? *login : AgentLogin();
  }

  static AgentLogin subscription(int64_t expiresInMs) {
    AgentLogin login;
    login.kind = AgentLogin::Kind::kSubscription;
    login.format = "claude-oauth";
    login.accessToken = "sk-ant-oat01-OLD-ACCESS";
    login.refreshToken = "sk-ant-ort01-OLD-REFRESH";
    login.expiresAtMs = kNowMs + expiresInMs;
    login.scopes = {"user:inference", "user:profile"};
    login.subscriptionType = "max";
    return login;
  }

  /// One session: its own SecretStore over the same files, its LoginTokens, loaded.
  struct Session {
    explicit Session(SecretStore s) : store(std::move(s)) {}
    SecretStore store;
    std::optional<LoginTokens> tokens;
  };
  std::unique_ptr<Session> session() {
    auto s = std::make_unique<Session>(store());
    s->tokens.emplace(s->store, kAgent, RefreshEndpoint{kUrl, kClientId}, endpoint_.poster(), lockPath(), clock_);
    auto loaded = s->tokens->load();
    EXPECT_TRUE(loaded) << loaded.error().message;
    return s;
  }
  std::string lockPath() const { return dir_.path() + "/login.lock"; }

  TempDir dir_;
  FileBackend file_;
  FixedClock clock_;
  FakeEndpoint endpoint_;
};

json refreshed(const std::string& access, std::optional<std::string> refresh, std::optional<double> expiresIn) {
  json o = {{"token_type", "Bearer"}, {"access_token", access}};
  if (refresh) o["refresh_token"] = *refresh;
  if (expiresIn) o["expires_in"] = *expiresIn;
  return o;
}

TEST_F(LoginTokensTest, AFreshTokenIsUsedAsStoredWithoutRefreshing) {
  put(subscription(60 * 60 * 1000));
  auto s = session();
  auto token = s->tokens->token();
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "sk-ant-oat01-OLD-ACCESS");
  EXPECT_TRUE(endpoint_.calls().empty());
}

TEST_F(LoginTokensTest, NothingStoredIsAnErrorNamingAirlockLogin) {
  auto s = std::make_unique<Session>(store());
  s->tokens.emplace(s->store, kAgent, RefreshEndpoint{kUrl, kClientId}, endpoint_.poster(), lockPath(), clock_);
  auto loaded = s->tokens->load();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("airlock login claude-code"), std::string::npos) << loaded.error().message;
}

TEST_F(LoginTokensTest, AnExpiringTokenIsRefreshedBeforeUseWithTheStoredRefreshToken) {
  put(subscription(kRefreshMarginMs - 1000));  // inside the margin
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH", 28800));
  auto s = session();
  auto token = s->tokens->token();
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "sk-ant-oat01-NEW-ACCESS");
  auto calls = endpoint_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].url, kUrl);
  EXPECT_EQ(calls[0].body["grant_type"], "refresh_token");
  EXPECT_EQ(calls[0].body["refresh_token"], "sk-ant-ort01-OLD-REFRESH");
  EXPECT_EQ(calls[0].body["client_id"], kClientId);
  EXPECT_EQ(calls[0].body["scope"], "user:inference user:profile");
  // Both rotated tokens are stored at once, with the new expiry; the rest is kept.
  AgentLogin now = stored();
  EXPECT_EQ(now.accessToken, "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(now.refreshToken, "sk-ant-ort01-NEW-REFRESH");
  EXPECT_EQ(now.expiresAtMs, kNowMs + 28800 * 1000);
  EXPECT_EQ(now.scopes, (std::vector<std::string>{"user:inference", "user:profile"}));
  EXPECT_EQ(now.subscriptionType, "max");
  EXPECT_EQ(now.kind, AgentLogin::Kind::kSubscription);
  // The next use takes the new token without refreshing again.
  token = s->tokens->token();
  ASSERT_TRUE(token);
  EXPECT_EQ(*token, "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(endpoint_.calls().size(), 1u);
}

TEST(RefreshRequest, AGoogleLoginIsRefreshedFormEncodedWithTheClientSecret) {
  AgentLogin login;
  login.kind = AgentLogin::Kind::kSubscription;
  login.format = "gemini-oauth";
  login.accessToken = "ya29.OLD";
  login.refreshToken = "1//0e-REFRESH/+=&x";
  login.scopes = {"openid", "email"};
  RefreshRequest request = refreshRequest(login, {"https://oauth2.example/token", "id-1.apps", "GOCSPX-s"});
  EXPECT_EQ(request.contentType, "application/x-www-form-urlencoded");
  // RFC 6749 section 6; the refresh token's '/', '+', '=' and '&' escaped; no scope (google-auth-library sends none).
  EXPECT_EQ(request.body,
            "grant_type=refresh_token&refresh_token=1%2F%2F0e-REFRESH%2F%2B%3D%26x&client_id=id-1.apps&"
            "client_secret=GOCSPX-s");
  login.format = "claude-oauth";
  request = refreshRequest(login, {"https://platform.example/token", "c-1", ""});
  EXPECT_EQ(request.contentType, "application/json");
  EXPECT_EQ(json::parse(request.body), (json{{"grant_type", "refresh_token"}, {"refresh_token", "1//0e-REFRESH/+=&x"},
                                             {"client_id", "c-1"}, {"scope", "openid email"}}));
}

TEST_F(LoginTokensTest, ACodexLoginIsRefreshedWithoutScopeAndExpiresWithItsAccessJwt) {
  AgentLogin login = subscription(-1000);
  login.format = "codex-oauth";
  put(login);
  // Codex's endpoint answers no expires_in; the new access token is a JWT with exp.
  const std::string access = "eyJhbGciOiJub25lIn0.eyJleHAiOjE5MDAwMDAwMDB9.c2ln";  // {"exp":1900000000}
  endpoint_.answer(200, json{{"access_token", access}, {"refresh_token", "rt_NEW"}, {"id_token", "eyJ.e30.x"}});
  auto s = session();
  auto token = s->tokens->token();
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, access);
  auto calls = endpoint_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].contentType, "application/json");
  EXPECT_FALSE(calls[0].body.contains("scope"));
  EXPECT_EQ(calls[0].body["refresh_token"], "sk-ant-ort01-OLD-REFRESH");
  AgentLogin now = stored();
  EXPECT_EQ(now.refreshToken, "rt_NEW");
  EXPECT_EQ(now.expiresAtMs, 1'900'000'000'000);
}

TEST_F(LoginTokensTest, AGoogleLoginIsRefreshedThroughItsFormAndKeepsItsRefreshToken) {
  AgentLogin login = subscription(-1000);
  login.format = "gemini-oauth";
  login.accessToken = "ya29.OLD";
  login.refreshToken = "1//OLD-REFRESH";
  put(login);
  // Google answers no refresh_token: the old one stays good.
  endpoint_.answer(200, json{{"access_token", "ya29.NEW"}, {"expires_in", 3599}, {"token_type", "Bearer"},
                             {"id_token", "eyJ.x.y"}, {"scope", "openid"}});
  auto s = std::make_unique<Session>(store());
  s->tokens.emplace(s->store, kAgent, RefreshEndpoint{kUrl, kClientId, "GOCSPX-s"}, endpoint_.poster(), lockPath(),
                    clock_);
  ASSERT_TRUE(s->tokens->load());
  auto token = s->tokens->token();
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "ya29.NEW");
  auto calls = endpoint_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].contentType, "application/x-www-form-urlencoded");
  EXPECT_NE(calls[0].body.get<std::string>().find("client_secret=GOCSPX-s"), std::string::npos);
  AgentLogin now = stored();
  EXPECT_EQ(now.accessToken, "ya29.NEW");
  EXPECT_EQ(now.refreshToken, "1//OLD-REFRESH");
  EXPECT_EQ(now.expiresAtMs, kNowMs + 3599 * 1000);
  EXPECT_EQ(serializeLogin(now).find("eyJ"), std::string::npos);
}

TEST_F(LoginTokensTest, AnEmptyRefreshTokenInTheAnswerKeepsTheStoredOne) {
  put(subscription(-1000));
  endpoint_.answer(200, json{{"access_token", "sk-ant-oat01-NEW"}, {"refresh_token", ""}, {"expires_in", 3600}});
  auto s = session();
  ASSERT_TRUE(s->tokens->token());
  EXPECT_EQ(stored().refreshToken, "sk-ant-ort01-OLD-REFRESH");
}

TEST_F(LoginTokensTest, AnExpiredTokenIsRefreshedAndOneOutsideTheMarginIsNot) {
  put(subscription(-1000));
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH", 3600));
  auto s = session();
  ASSERT_EQ(s->tokens->token().value_or(""), "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(endpoint_.calls().size(), 1u);
  // An hour later minus the margin and a bit: still good.
  clock_.at += std::chrono::milliseconds(3600 * 1000 - kRefreshMarginMs - 1000);
  ASSERT_EQ(s->tokens->token().value_or(""), "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(endpoint_.calls().size(), 1u);
  // Two seconds later it is inside the margin.
  clock_.at += std::chrono::seconds(2);
  endpoint_.answer(200, refreshed("sk-ant-oat01-THIRD", std::nullopt, 3600));
  ASSERT_EQ(s->tokens->token().value_or(""), "sk-ant-oat01-THIRD");
  EXPECT_EQ(endpoint_.calls().size(), 2u);
}

TEST_F(LoginTokensTest, ARefreshAnswerWithoutRefreshTokenKeepsTheOldOne) {
  put(subscription(0));
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", std::nullopt, 3600));
  auto s = session();
  ASSERT_EQ(s->tokens->token().value_or(""), "sk-ant-oat01-NEW-ACCESS");
  AgentLogin now = stored();
  EXPECT_EQ(now.accessToken, "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(now.refreshToken, "sk-ant-ort01-OLD-REFRESH");
  EXPECT_EQ(s->tokens->login().refreshToken, "sk-ant-ort01-OLD-REFRESH");
}

TEST_F(LoginTokensTest, ATokenAnotherSessionStoredIsAdoptedWithoutRefreshing) {
  put(subscription(kRefreshMarginMs / 2));  // expiring soon
  auto mine = session();
  // Another session refreshed first (spending the refresh token) and stored the result.
  AgentLogin theirs = subscription(8 * 3600 * 1000);
  theirs.accessToken = "sk-ant-oat01-THEIRS";
  theirs.refreshToken = "sk-ant-ort01-THEIRS";
  put(theirs);
  endpoint_.answer(400, json{{"error", "invalid_grant"}});  // the old refresh token is spent
  auto token = mine->tokens->token();
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "sk-ant-oat01-THEIRS");
  EXPECT_TRUE(endpoint_.calls().empty());
  EXPECT_EQ(mine->tokens->login().refreshToken, "sk-ant-ort01-THEIRS");
}

TEST_F(LoginTokensTest, ARejectedTokenAnotherSessionAlreadyReplacedIsAdoptedWithoutRefreshing) {
  put(subscription(3600 * 1000));
  auto mine = session();
  AgentLogin theirs = subscription(8 * 3600 * 1000);
  theirs.accessToken = "sk-ant-oat01-THEIRS";
  put(theirs);
  auto token = mine->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "sk-ant-oat01-THEIRS");
  EXPECT_TRUE(endpoint_.calls().empty());
}

TEST_F(LoginTokensTest, ARejectedTokenIsRefreshedOnceAndAnOlderRejectionGetsTheNewToken) {
  put(subscription(3600 * 1000));  // not expiring: the API revoked it all the same
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH", 3600));
  auto s = session();
  auto token = s->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "sk-ant-oat01-NEW-ACCESS");
  ASSERT_EQ(endpoint_.calls().size(), 1u);
  EXPECT_EQ(endpoint_.calls()[0].body["refresh_token"], "sk-ant-ort01-OLD-REFRESH");
  EXPECT_EQ(stored().accessToken, "sk-ant-oat01-NEW-ACCESS");
  // A request that was sent with the old token and comes back 401 later.
  token = s->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS");
  ASSERT_TRUE(token);
  EXPECT_EQ(*token, "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(endpoint_.calls().size(), 1u);
}

TEST_F(LoginTokensTest, AFreshlyRefreshedTokenRefusedAgainIsNotRefreshedForAMinute) {
  put(subscription(3600 * 1000));
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH", 3600));
  auto s = session();
  ASSERT_TRUE(s->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS"));
  // The API refuses the new token too (or a guest provokes 401s): no refresh storm.
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEWER-ACCESS", "sk-ant-ort01-NEWER-REFRESH", 3600));
  clock_.at += std::chrono::seconds(59);
  auto again = s->tokens->replaceRejected("sk-ant-oat01-NEW-ACCESS");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("airlock login claude-code"), std::string::npos) << again.error().message;
  EXPECT_EQ(endpoint_.calls().size(), 1u);
  // A minute on, it may refresh again.
  clock_.at += std::chrono::seconds(2);
  auto later = s->tokens->replaceRejected("sk-ant-oat01-NEW-ACCESS");
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_EQ(*later, "sk-ant-oat01-NEWER-ACCESS");
  EXPECT_EQ(endpoint_.calls().size(), 2u);
}

TEST_F(LoginTokensTest, ConcurrentRejectionsOfOneTokenShareOneRefresh) {
  put(subscription(3600 * 1000));
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH", 3600));
  endpoint_.delay = std::chrono::milliseconds(50);
  auto s = session();
  std::vector<std::thread> threads;
  std::vector<std::string> got(8);
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      auto token = i % 2 ? s->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS") : s->tokens->token();
      got[i] = token ? *token : "error: " + token.error().message;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(endpoint_.calls().size(), 1u);
  for (size_t i = 1; i < got.size(); i += 2) EXPECT_EQ(got[i], "sk-ant-oat01-NEW-ACCESS");
}

TEST_F(LoginTokensTest, TwoSessionsRefreshingAnExpiringLoginAtOnceSpendTheRefreshTokenOnce) {
  put(subscription(0));
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH", 3600));
  endpoint_.delay = std::chrono::milliseconds(100);
  auto a = session();
  auto b = session();
  std::string fromA, fromB;
  std::thread ta([&] { fromA = a->tokens->token().value_or("error"); });
  std::thread tb([&] { fromB = b->tokens->token().value_or("error"); });
  ta.join();
  tb.join();
  EXPECT_EQ(fromA, "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(fromB, "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(endpoint_.calls().size(), 1u);
}

TEST_F(LoginTokensTest, AFailedRefreshIsAnErrorNamingAirlockLoginAndChangesNothing) {
  put(subscription(0));
  endpoint_.answer(400, json{{"error", "invalid_grant"}, {"error_description", "Refresh token not found"}});
  auto s = session();
  auto token = s->tokens->token();
  ASSERT_FALSE(token);
  EXPECT_NE(token.error().message.find("airlock login claude-code"), std::string::npos) << token.error().message;
  EXPECT_NE(token.error().message.find("400"), std::string::npos) << token.error().message;
  EXPECT_EQ(token.error().message.find("OLD-REFRESH"), std::string::npos);
  EXPECT_EQ(stored().accessToken, "sk-ant-oat01-OLD-ACCESS");
  EXPECT_EQ(stored().refreshToken, "sk-ant-ort01-OLD-REFRESH");
  // Also after a 401 from the API.
  auto replaced = s->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS");
  ASSERT_FALSE(replaced);
  EXPECT_NE(replaced.error().message.find("airlock login"), std::string::npos) << replaced.error().message;
}

TEST_F(LoginTokensTest, UnusableRefreshAnswersAreRefusedAndNothingIsStored) {
  put(subscription(0));
  auto s = session();
  for (const auto& [status, body] : std::vector<std::pair<long, std::string>>{
           {200, "not json"},
           {200, "{}"},
           {200, R"({"access_token": 5})"},
           {200, R"({"access_token": ""})"},
           {200, R"({"access_token": "sk-ant-oat01-NEW
X-Injected: 1"})"},
           {200, R"({"access_token": "sk-ant-oat01-NEW ACCESS"})"},
           {200, R"({"access_token": "sk-ant-oat01-NEW", "refresh_token": "bad
refresh"})"},
           {500, R"({"access_token": "sk-ant-oat01-NEW"})"},
       }) {
    endpoint_.answerText(status, body);
    auto token = s->tokens->token();
    EXPECT_FALSE(token) << body << " -> " << token.value_or("");
    EXPECT_EQ(stored().accessToken, "sk-ant-oat01-OLD-ACCESS") << body;
    EXPECT_EQ(stored().refreshToken, "sk-ant-ort01-OLD-REFRESH") << body;
  }
  endpoint_.unreachable();
  auto token = s->tokens->token();
  ASSERT_FALSE(token);
  EXPECT_NE(token.error().message.find("Could not resolve host"), std::string::npos) << token.error().message;
}

TEST_F(LoginTokensTest, AnAbsurdExpiryFromTheEndpointDoesNotMakeEveryUseRefresh) {
  put(subscription(0));
  for (double expiresIn : {1e300, 1e18, 9.3e15}) {
    endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-" + std::to_string(endpoint_.calls().size()), std::nullopt,
                                    expiresIn));
    auto s = session();
    size_t before = endpoint_.calls().size();
    auto token = s->tokens->token();  // refreshes (the stored login expires now or is long gone)
    ASSERT_TRUE(token) << token.error().message;
    EXPECT_EQ(endpoint_.calls().size(), before + 1) << expiresIn;
    token = s->tokens->token();
    ASSERT_TRUE(token);
    EXPECT_EQ(endpoint_.calls().size(), before + 1) << "refreshed again after expires_in " << expiresIn;
    AgentLogin now = stored();
    ASSERT_TRUE(now.expiresAtMs);
    EXPECT_GT(*now.expiresAtMs, kNowMs) << expiresIn;
    put(subscription(0));  // the next round starts expired again
  }
}

TEST_F(LoginTokensTest, ALongLivedTokenLoginIsNeverRefreshed) {
  auto login = loginFromToken("claude-oauth", "sk-ant-oat01-LONG-LIVED");
  ASSERT_TRUE(login);
  login->expiresAtMs = kNowMs - 1000;  // even when an expiry is known and past
  put(*login);
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", "sk-ant-ort01-NEW-REFRESH", 3600));
  auto s = session();
  auto token = s->tokens->token();
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(*token, "sk-ant-oat01-LONG-LIVED");
  auto replaced = s->tokens->replaceRejected("sk-ant-oat01-LONG-LIVED");
  ASSERT_FALSE(replaced);
  EXPECT_NE(replaced.error().message.find("airlock login claude-code"), std::string::npos)
      << replaced.error().message;
  EXPECT_TRUE(endpoint_.calls().empty());
  EXPECT_EQ(stored().accessToken, "sk-ant-oat01-LONG-LIVED");
}

TEST_F(LoginTokensTest, ALoginWithoutKnownExpiryIsRefreshedOnlyWhenRejected) {
  AgentLogin login = subscription(0);
  login.expiresAtMs.reset();
  put(login);
  endpoint_.answer(200, refreshed("sk-ant-oat01-NEW-ACCESS", std::nullopt, std::nullopt));
  auto s = session();
  EXPECT_EQ(s->tokens->token().value_or(""), "sk-ant-oat01-OLD-ACCESS");
  EXPECT_TRUE(endpoint_.calls().empty());
  EXPECT_EQ(s->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS").value_or(""), "sk-ant-oat01-NEW-ACCESS");
  EXPECT_EQ(endpoint_.calls().size(), 1u);
  EXPECT_FALSE(stored().expiresAtMs);
}

TEST_F(LoginTokensTest, ARefreshGivingTheSameTokenIsAnError) {
  put(subscription(3600 * 1000));
  endpoint_.answer(200, refreshed("sk-ant-oat01-OLD-ACCESS", std::nullopt, 3600));
  auto s = session();
  auto token = s->tokens->replaceRejected("sk-ant-oat01-OLD-ACCESS");
  EXPECT_FALSE(token);
}

}  // namespace
}  // namespace airlock::secrets
