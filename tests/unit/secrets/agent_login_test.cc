#include "secrets/agent_login.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/exit_codes.h"

namespace airlock::secrets {
namespace {

using nlohmann::json;

constexpr const char* kAccess = "sk-ant-oat01-REAL-ACCESS-0123456789abcdef";
constexpr const char* kRefresh = "sk-ant-ort01-REAL-REFRESH-0123456789abcdef";

AgentLogin subscription() {
  AgentLogin login;
  login.kind = AgentLogin::Kind::kSubscription;
  login.format = "claude-oauth";
  login.accessToken = kAccess;
  login.refreshToken = kRefresh;
  login.expiresAtMs = 1'900'000'000'000;
  login.scopes = {"user:inference", "user:profile"};
  login.subscriptionType = "max";
  login.rateLimitTier = "default_claude_max_20x";
  login.accountJson = R"({"emailAddress":"a@b.c","accountUuid":"u-1"})";
  return login;
}

std::string credentialFile(const json& oauth) { return json{{"claudeAiOauth", oauth}}.dump(); }

json goodOauth() {
  return {{"accessToken", kAccess},
          {"refreshToken", kRefresh},
          {"expiresAt", 1'900'000'000'000},
          {"scopes", {"user:inference", "user:profile"}},
          {"subscriptionType", "max"},
          {"rateLimitTier", "default_claude_max_20x"}};
}

TEST(AgentLogin, TheSecretIsNamedAfterTheAgent) { EXPECT_EQ(loginSecretName("claude-code"), "login.claude-code"); }

TEST(AgentLogin, ASubscriptionLoginRoundTrips) {
  AgentLogin in = subscription();
  auto out = parseLogin(serializeLogin(in));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->kind, AgentLogin::Kind::kSubscription);
  EXPECT_EQ(out->format, "claude-oauth");
  EXPECT_EQ(out->accessToken, kAccess);
  EXPECT_EQ(out->refreshToken, kRefresh);
  EXPECT_EQ(out->expiresAtMs, in.expiresAtMs);
  EXPECT_EQ(out->scopes, in.scopes);
  EXPECT_EQ(out->subscriptionType, "max");
  EXPECT_EQ(out->rateLimitTier, "default_claude_max_20x");
  EXPECT_EQ(json::parse(out->accountJson), json::parse(in.accountJson));
}

TEST(AgentLogin, ATokenLoginRoundTripsWithoutRefreshTokenOrExpiry) {
  auto in = loginFromToken("claude-oauth", "sk-ant-oat01-LONG-LIVED-abc");
  ASSERT_TRUE(in);
  auto out = parseLogin(serializeLogin(*in));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->kind, AgentLogin::Kind::kToken);
  EXPECT_EQ(out->accessToken, "sk-ant-oat01-LONG-LIVED-abc");
  EXPECT_EQ(out->refreshToken, "");
  EXPECT_FALSE(out->expiresAtMs);
  EXPECT_EQ(out->accountJson, "");
}

TEST(AgentLogin, AStoredValueThatIsNotAirlocksLoginIsRefused) {
  json good = json::parse(serializeLogin(subscription()));
  std::vector<std::string> bad = {"", "not json", "[]", "null", "{}", std::string(100000, '[')};
  for (auto [key, value] : std::vector<std::pair<std::string, json>>{{"kind", "other"},
                                                                       {"kind", 1},
                                                                       {"format", "codex"},
                                                                       {"accessToken", ""},
                                                                       {"accessToken", 5},
                                                                       {"accessToken", "has space"},
                                                                       {"accessToken", "line\nbreak"},
                                                                       {"accessToken", "cr\rhere"},
                                                                       {"accessToken", "caf\xc3\xa9"},
                                                                       {"refreshToken", "a\r\nX-Injected: 1"}}) {
    json o = good;
    o[key] = value;
    bad.push_back(o.dump());
  }
  for (const auto& value : bad) {
    auto r = parseLogin(value);
    EXPECT_FALSE(r) << value.substr(0, 200);
    if (!r) {
      EXPECT_NE(r.error().message.find("airlock login"), std::string::npos);
    }
  }
}

TEST(AgentLogin, ClaudesCredentialFileGivesASubscriptionLoginWithOnlyTheCredentialFields) {
  json oauth = goodOauth();
  oauth["somethingNew"] = "ignored";
  auto login = loginFromCredentialFile("claude-oauth", credentialFile(oauth));
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->kind, AgentLogin::Kind::kSubscription);
  EXPECT_EQ(login->format, "claude-oauth");
  EXPECT_EQ(login->accessToken, kAccess);
  EXPECT_EQ(login->refreshToken, kRefresh);
  EXPECT_EQ(login->expiresAtMs, 1'900'000'000'000);
  EXPECT_EQ(login->scopes, (std::vector<std::string>{"user:inference", "user:profile"}));
  EXPECT_EQ(login->subscriptionType, "max");
  EXPECT_EQ(login->rateLimitTier, "default_claude_max_20x");
  EXPECT_EQ(serializeLogin(*login).find("somethingNew"), std::string::npos);
}

TEST(AgentLogin, ACredentialFileWithoutRefreshTokenIsALongLivedTokenLogin) {
  json oauth = goodOauth();
  oauth.erase("refreshToken");
  auto login = loginFromCredentialFile("claude-oauth", credentialFile(oauth));
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->kind, AgentLogin::Kind::kToken);
  EXPECT_EQ(login->refreshToken, "");
  oauth["refreshToken"] = "";
  login = loginFromCredentialFile("claude-oauth", credentialFile(oauth));
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->kind, AgentLogin::Kind::kToken);
}

TEST(AgentLogin, HostileCredentialFilesAreRefusedWithUsageErrors) {
  std::vector<std::string> files = {
      "",
      "not json",
      "{\"claudeAiOauth\": ",
      "[]",
      "{}",
      "{\"claudeAiOauth\": \"sk-ant-oat01-x\"}",
      "{\"claudeAiOauth\": []}",
      "{\"other\": {\"accessToken\": \"sk-ant-oat01-x\"}}",
      std::string(60000, '[') + std::string(60000, ']'),           // over the cap and deep
      std::string(30000, '[') + std::string(30000, ']'),           // under the cap, deep
      "{\"claudeAiOauth\":" + std::string(20000, '[') + "1" + std::string(20000, ']') + "}",
      "{\"claudeAiOauth\": {\"accessToken\": \"" + std::string(kMaxCredentialFileBytes, 'a') + "\"}}",  // huge
  };
  json oauth = goodOauth();
  for (json value : {json(""), json(nullptr), json(42), json::array({"x"}), json("sk-ant-oat01-has space"),
                     json("sk-ant-oat01-new\nline"), json("sk-ant-oat01-cr\rX-Evil: 1"), json("sk-ant-oat01-tab\t"),
                     json(std::string("sk-ant-oat01-nul\0x", 18)), json("sk-ant-oat01-del\x7f"), json("sk-ant-oat01-\xc3\xa9"),
                     json(std::string(kMaxTokenBytes + 1, 'a'))}) {
    json bad = oauth;
    bad["accessToken"] = value;
    files.push_back(credentialFile(bad));
    if (!value.is_string() || value.get<std::string>().empty()) continue;  // a refresh token may be missing
    bad = oauth;
    bad["refreshToken"] = value;
    files.push_back(credentialFile(bad));
  }
  for (const auto& content : files) {
    auto r = loginFromCredentialFile("claude-oauth", content);
    EXPECT_FALSE(r) << content.substr(0, 200);
    if (!r) {
      EXPECT_EQ(r.error().code, exit_code::kUsage) << content.substr(0, 200);
    }
  }
  // A file cut short or not UTF-8 says so, not that it holds no login.
  for (std::string_view format : {"claude-oauth", "gemini-oauth", "codex-oauth", "opencode-oauth"}) {
    auto cut = loginFromCredentialFile(format, "{\"claudeAiOauth\": {\"accessToken\": \"sk-ant-oat01-\xff\"}}");
    ASSERT_FALSE(cut);
    EXPECT_NE(cut.error().message.find("is not JSON"), std::string::npos) << cut.error().message;
  }
  auto r = loginFromCredentialFile("codex-oauth", credentialFile(goodOauth()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage);
  r = loginFromCredentialFile("netrc", credentialFile(goodOauth()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage);
}

TEST(AgentLogin, OddSideFieldsOfACredentialFileAreDroppedNotTrusted) {
  json oauth = goodOauth();
  oauth["expiresAt"] = "tomorrow";
  oauth["scopes"] = {"user:inference", 7, nullptr, std::string(500, 's')};
  oauth["subscriptionType"] = "max\nX-Evil: 1";
  oauth["rateLimitTier"] = std::string(100, 't');
  auto login = loginFromCredentialFile("claude-oauth", credentialFile(oauth));
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_FALSE(login->expiresAtMs);
  EXPECT_EQ(login->scopes, std::vector<std::string>{"user:inference"});
  EXPECT_EQ(login->subscriptionType, "");
  EXPECT_EQ(login->rateLimitTier, "");
}

TEST(AgentLogin, ALongLivedTokenLosesOneTrailingNewlineAndNothingElse) {
  for (const char* given : {"sk-ant-oat01-abc", "sk-ant-oat01-abc\n", "sk-ant-oat01-abc\r\n"}) {
    auto login = loginFromToken("claude-oauth", given);
    ASSERT_TRUE(login) << given;
    EXPECT_EQ(login->accessToken, "sk-ant-oat01-abc");
    EXPECT_EQ(login->kind, AgentLogin::Kind::kToken);
    EXPECT_EQ(login->format, "claude-oauth");
  }
  for (const std::string& bad : std::vector<std::string>{"", "\n", "sk-ant-oat01-abc\n\n", " sk-ant-oat01-abc", "sk-ant oat01", "a\tb",
                          "sk-ant-oat01-abc\nAuthorization: x", "a\rb", std::string("a\0b", 3), "caf\xc3\xa9",
                          std::string(kMaxTokenBytes + 1, 'a')}) {
    auto r = loginFromToken("claude-oauth", bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_EQ(r.error().code, exit_code::kUsage);
    }
  }
  EXPECT_TRUE(loginFromToken("claude-oauth", "sk-ant-oat01-" + std::string(kMaxTokenBytes - 13, 'a')));
  // An API key, or any other text, is not a Claude login: refused at once, not by the API at run time.
  auto key = loginFromToken("claude-oauth", "sk-ant-api03-KEY");
  ASSERT_FALSE(key);
  EXPECT_NE(key.error().message.find("--env ANTHROPIC_API_KEY"), std::string::npos) << key.error().message;
  EXPECT_FALSE(loginFromToken("claude-oauth", "notatoken"));
  json file = {{"claudeAiOauth", {{"accessToken", "sk-ant-api03-KEY"}, {"refreshToken", "r"}, {"expiresAt", 1}}}};
  EXPECT_FALSE(loginFromCredentialFile("claude-oauth", file.dump()));
  EXPECT_FALSE(loginFromToken("nope", "sk-ant-oat01-abc"));
}

TEST(AgentLogin, ThePlaceholderKeepsTheTokensKindPrefixAndNothingOfTheSecret) {
  AgentLogin login = subscription();
  EXPECT_EQ(placeholderToken(login), "sk-ant-oat01-airlock-placeholder");
  login.accessToken = "sk-ant-api03-abc-def-ghi";
  EXPECT_EQ(placeholderToken(login), "sk-ant-api03-airlock-placeholder");
  login.accessToken = "opaque";
  EXPECT_EQ(placeholderToken(login), "airlock-placeholder");
}

TEST(AgentLogin, ThePlaceholderNeverContainsTheRealToken) {
  // Whatever the token looks like, the placeholder carries at most a short
  // kind prefix of it, never the token or most of it.
  for (const std::string& real : std::vector<std::string>{"sk-ant-oat01-REAL", "a-b-c-", "a-b-c-d", "---", "x--y-",
                           "s3cr3t-p4rt-0f-the-t0ken-which-has-many-dashes",
                           "SECRETSECRETSECRET-SECRETSECRETSECRET-SECRETSECRETSECRET-x",
                           "sk-ant-oat01-" + std::string(80, 'Z')}) {
    AgentLogin login = subscription();
    login.accessToken = real;
    std::string placeholder = placeholderToken(login);
    EXPECT_EQ(placeholder.find(real), std::string::npos) << real << " -> " << placeholder;
    EXPECT_TRUE(placeholder.ends_with(kPlaceholderMark)) << placeholder;
    std::string prefix = placeholder.substr(0, placeholder.size() - kPlaceholderMark.size());
    EXPECT_LE(prefix.size(), 16u) << real << " -> " << placeholder;
    EXPECT_EQ(prefix.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), std::string::npos) << real << " -> " << placeholder;
  }
}

TEST(AgentLogin, ThePlaceholderCredentialFileHasNoRealTokenAndNeverExpires) {
  AgentLogin login = subscription();
  std::string file = placeholderCredentialFile(login).value_or("");
  EXPECT_EQ(file.find("REAL"), std::string::npos) << file;
  EXPECT_EQ(file.find(kAccess), std::string::npos);
  EXPECT_EQ(file.find(kRefresh), std::string::npos);
  EXPECT_EQ(file.find("a@b.c"), std::string::npos);
  // The agent reads it as its own subscription login.
  auto back = loginFromCredentialFile("claude-oauth", file);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->kind, AgentLogin::Kind::kSubscription);
  EXPECT_TRUE(back->accessToken.starts_with("sk-ant-oat01-"));
  EXPECT_TRUE(back->refreshToken.starts_with("sk-ant-ort01-"));
  EXPECT_NE(back->accessToken.find(kPlaceholderMark), std::string::npos);
  EXPECT_NE(back->refreshToken.find(kPlaceholderMark), std::string::npos);
  EXPECT_EQ(back->expiresAtMs, 4102444800000);
  EXPECT_EQ(back->scopes, login.scopes);
  EXPECT_EQ(back->subscriptionType, "max");
  EXPECT_EQ(back->rateLimitTier, "default_claude_max_20x");
}

TEST(AgentLogin, TheAccountKeepsOnlyShortScalars) {
  json file = {{"oauthAccount",
                {{"emailAddress", "a@b.c"},
                 {"accountUuid", "u-1"},
                 {"hasExtraUsageEnabled", true},
                 {"seats", 3},
                 {"nested", {{"x", 1}}},
                 {"list", {1, 2}},
                 {"long", std::string(257, 'l')},
                 {std::string(65, 'k'), "v"}}},
               {"other", 1}};
  json account = json::parse(accountFromFile(file.dump(), "oauthAccount"));
  EXPECT_EQ(account, (json{{"emailAddress", "a@b.c"}, {"accountUuid", "u-1"}, {"hasExtraUsageEnabled", true},
                           {"seats", 3}}));
  EXPECT_EQ(accountFromFile(file.dump(), "missing"), "");
  EXPECT_EQ(accountFromFile("not json", "oauthAccount"), "");
  EXPECT_EQ(accountFromFile(R"({"oauthAccount": "x"})", "oauthAccount"), "");
  EXPECT_EQ(accountFromFile(std::string(50000, '['), "oauthAccount"), "");

  AgentLogin login = subscription();
  json merged = json::parse(withAccount(R"({"theme":"dark","oauthAccount":{"old":1}})", "oauthAccount", login));
  EXPECT_EQ(merged["theme"], "dark");
  EXPECT_EQ(merged["oauthAccount"], json::parse(login.accountJson));
  EXPECT_EQ(json::parse(withAccount("", "oauthAccount", login))["oauthAccount"], json::parse(login.accountJson));
  EXPECT_EQ(json::parse(withAccount("[1]", "oauthAccount", login)).size(), 1u);
  login.accountJson = "";
  EXPECT_EQ(json::parse(withAccount(R"({"theme":"dark"})", "oauthAccount", login)), (json{{"theme", "dark"}}));
}

TEST(AgentLogin, GeminisCredentialFileGivesASubscriptionLoginWithOnlyTheCredentialFields) {
  json creds = {{"access_token", "ya29.REAL-ACCESS"},
                {"refresh_token", "1//REAL-REFRESH"},
                {"scope", "https://www.googleapis.com/auth/cloud-platform openid  email"},
                {"token_type", "Bearer"},
                {"id_token", "eyJ.REAL-ID-TOKEN.sig"},
                {"expiry_date", 1'900'000'000'000}};
  auto login = loginFromCredentialFile("gemini-oauth", creds.dump());
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->kind, AgentLogin::Kind::kSubscription);
  EXPECT_EQ(login->format, "gemini-oauth");
  EXPECT_EQ(login->accessToken, "ya29.REAL-ACCESS");
  EXPECT_EQ(login->refreshToken, "1//REAL-REFRESH");
  EXPECT_EQ(login->expiresAtMs, 1'900'000'000'000);
  EXPECT_EQ(login->scopes, (std::vector<std::string>{"https://www.googleapis.com/auth/cloud-platform", "openid", "email"}));
  // The id token (a JWT naming the user) is not a credential airlock needs.
  std::string value = serializeLogin(*login);
  EXPECT_EQ(value.find("REAL-ID-TOKEN"), std::string::npos) << value;
  auto back = parseLogin(value);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->format, "gemini-oauth");
  EXPECT_EQ(back->refreshToken, "1//REAL-REFRESH");
  // Without a refresh token it would stop working within the hour: refused,
  // as a bare access token on stdin is.
  creds.erase("refresh_token");
  login = loginFromCredentialFile("gemini-oauth", creds.dump());
  ASSERT_FALSE(login);
  EXPECT_EQ(login.error().code, exit_code::kUsage);
  EXPECT_NE(login.error().message.find("no refresh_token"), std::string::npos) << login.error().message;
}

TEST(AgentLogin, HostileGeminiCredentialFilesAreRefusedOrTheirOddFieldsDropped) {
  for (std::string file : {std::string("{}"), std::string(R"({"access_token": 5})"),
                           std::string(R"({"access_token": "ya29 x"})"), std::string(R"({"claudeAiOauth": {}})"),
                           std::string(R"([{"access_token": "ya29.x"}])"),
                           std::string(R"({"access_token": "ya29.x", "refresh_token": "1//
X: y"})")}) {
    auto login = loginFromCredentialFile("gemini-oauth", file);
    ASSERT_FALSE(login) << file;
    EXPECT_EQ(login.error().code, exit_code::kUsage) << file;
  }
  auto none = loginFromCredentialFile("gemini-oauth", "{}");
  EXPECT_NE(none.error().message.find("gemini"), std::string::npos) << none.error().message;
  // An expiry that would overflow is unknown rather than in the past; a
  // scope list is capped.
  std::string scopes;
  for (int i = 0; i < 100; ++i) scopes += "s" + std::to_string(i) + " ";
  auto odd = loginFromCredentialFile(
      "gemini-oauth",
      json{{"access_token", "ya29.x"}, {"refresh_token", "1//r"}, {"expiry_date", 1e300}, {"scope", scopes}}.dump());
  ASSERT_TRUE(odd) << odd.error().message;
  EXPECT_FALSE(odd->expiresAtMs);
  EXPECT_EQ(odd->scopes.size(), 32u);
}

TEST(AgentLogin, AGeminiLoginGetsNoPlaceholderFileButAPlaceholderToken) {
  auto login = loginFromCredentialFile("gemini-oauth", R"({"access_token":"ya29.a0AfB-REAL","refresh_token":"1//r"})");
  ASSERT_TRUE(login);
  EXPECT_FALSE(placeholderCredentialFile(*login));
  EXPECT_EQ(placeholderToken(*login), kPlaceholderMark);
  EXPECT_TRUE(placeholderCredentialFile(subscription()));
}

TEST(AgentLogin, TheAccountSeedNeverCarriesTheLoginsTokens) {
  const std::string creds = R"({"access_token":"ya29.REAL-ACCESS","refresh_token":"1//REAL-REFRESH","who":"a@b.c"})";
  auto login = loginFromCredentialFile("gemini-oauth", creds);
  ASSERT_TRUE(login);
  login->accountJson = accountFromFile(creds, "");
  std::string seed = withAccount("", "", *login);
  EXPECT_EQ(seed.find("REAL"), std::string::npos) << seed;
  EXPECT_NE(seed.find("a@b.c"), std::string::npos) << seed;
  // A Google access token alone is not a login airlock keeps.
  EXPECT_FALSE(loginFromToken("gemini-oauth", "ya29.a0-token"));
}

TEST(AgentLogin, AnAccountFileWithoutKeyIsTakenFromItsTopLevel) {
  // Gemini's google_accounts.json.
  std::string account = accountFromFile(R"({"active":"a@b.c","old":["x@y.z"]})", "");
  EXPECT_EQ(json::parse(account), (json{{"active", "a@b.c"}}));
  AgentLogin login = subscription();
  login.accountJson = account;
  EXPECT_EQ(json::parse(withAccount(R"({"active":null,"old":[]})", "", login)),
            (json{{"active", "a@b.c"}, {"old", json::array()}}));
  EXPECT_EQ(json::parse(withAccount("", "", login)), (json{{"active", "a@b.c"}}));
}

std::string base64Url(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= uint8_t(bytes[i + 2]);
    for (size_t k = 0; k < 4 && i * 4 / 3 + k <= bytes.size() * 4 / 3; ++k) out += digits[(v >> (18 - 6 * k)) & 63];
  }
  return out;
}
std::string jwt(const json& claims) {
  return base64Url(R"({"alg":"RS256","typ":"JWT"})") + "." + base64Url(claims.dump()) + ".c2lnbmF0dXJl";
}

json codexAuth() {
  json auth = {{"chatgpt_account_id", "acct-1"}, {"chatgpt_plan_type", "pro"}, {"chatgpt_user_id", "user-1"},
               {"groups", {"g"}}};
  return {{"auth_mode", "chatgpt"},
          {"OPENAI_API_KEY", nullptr},
          {"tokens",
           {{"id_token", jwt({{"email", "u@example.com"}, {"https://api.openai.com/auth", auth}, {"exp", 1900000000}})},
            {"access_token", jwt({{"exp", 1900000000}, {"REAL", "ACCESS"}})},
            {"refresh_token", "rt_REAL-REFRESH"},
            {"account_id", "acct-1"}}},
          {"last_refresh", "2026-12-01T00:00:00Z"}};
}

TEST(AgentLogin, CodexsAuthFileGivesAChatGptLoginWithItsAccountAndTheAccessTokensExpiry) {
  auto login = loginFromCredentialFile("codex-oauth", codexAuth().dump());
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->kind, AgentLogin::Kind::kSubscription);
  EXPECT_EQ(login->refreshToken, "rt_REAL-REFRESH");
  EXPECT_EQ(login->expiresAtMs, 1'900'000'000'000);
  EXPECT_EQ(login->subscriptionType, "pro");
  EXPECT_EQ(json::parse(login->accountJson),
            (json{{"email", "u@example.com"},
                  {"account_id", "acct-1"},
                  {"auth", {{"chatgpt_account_id", "acct-1"}, {"chatgpt_plan_type", "pro"}, {"chatgpt_user_id", "user-1"}}}}));
  // The id token itself is not kept.
  EXPECT_EQ(serializeLogin(*login).find(codexAuth()["tokens"]["id_token"].get<std::string>()), std::string::npos);
  // An API-key auth.json, or a bare token, is not a ChatGPT login.
  auto key = loginFromCredentialFile("codex-oauth", R"({"auth_mode":"apikey","OPENAI_API_KEY":"sk-x"})");
  ASSERT_FALSE(key);
  EXPECT_NE(key.error().message.find("CODEX_API_KEY"), std::string::npos);
  EXPECT_FALSE(loginFromToken("codex-oauth", "eyJ.x.y"));
  // Tokens without a refresh token stop working when the access token expires.
  json noRefresh = codexAuth();
  noRefresh["tokens"].erase("refresh_token");
  auto bare = loginFromCredentialFile("codex-oauth", noRefresh.dump());
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message.find("no refresh_token"), std::string::npos) << bare.error().message;
}

TEST(AgentLogin, JwtExpiryIsReadOnlyFromAWellFormedToken) {
  EXPECT_EQ(jwtExpiryMs(jwt({{"exp", 1900000000}})), 1'900'000'000'000);
  EXPECT_EQ(jwtExpiryMs(jwt({{"exp", 1.9e9}})), 1'900'000'000'000);
  for (const std::string& bad : std::vector<std::string>{"", "sk-ant-oat01-x", "a.b", "a.b.c", jwt({{"exp", "soon"}}),
                                                         jwt({{"exp", -1}}), jwt({{"exp", 1e300}}), jwt({{"nbf", 1}}),
                                                         "x." + base64Url("[1]") + ".y", "x.%%%.y"})
    EXPECT_FALSE(jwtExpiryMs(bad)) << bad;
}

// A custom agent's token that is a JWT is dated by its exp (secret ls,
// the run's expiry warning and refusal).
TEST(AgentLogin, ATokenThatIsAJwtCarriesItsExpiry) {
  auto login = loginFromToken("token", jwt({{"exp", 1900000000}}));
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->expiresAtMs, 1'900'000'000'000);
  EXPECT_FALSE(loginFromToken("token", "opaque-token")->expiresAtMs);
}

TEST(AgentLogin, TheCodexPlaceholderCarriesTheAccountClaimsAndNoRealToken) {
  auto login = loginFromCredentialFile("codex-oauth", codexAuth().dump());
  ASSERT_TRUE(login);
  auto file = placeholderCredentialFile(*login);
  ASSERT_TRUE(file);
  EXPECT_EQ(file->find("REAL"), std::string::npos) << *file;
  json doc = json::parse(*file);
  EXPECT_EQ(doc["auth_mode"], "chatgpt");
  EXPECT_EQ(doc["tokens"]["account_id"], "acct-1");
  EXPECT_EQ(doc["tokens"]["access_token"], kPlaceholderMark);  // not a JWT: Codex never refreshes it
  EXPECT_FALSE(jwtExpiryMs(doc["tokens"]["access_token"].get<std::string>()));
  // The id token Codex reads: the account claims, an expiry far ahead.
  auto again = loginFromCredentialFile("codex-oauth", *file);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->subscriptionType, "pro");
  EXPECT_EQ(json::parse(again->accountJson), json::parse(login->accountJson));
  EXPECT_EQ(jwtExpiryMs(doc["tokens"]["id_token"].get<std::string>()), 4'102'444'800'000);
}

json opencodeAuth() {
  return {{"openai",
           {{"type", "oauth"},
            {"refresh", "rt_REAL-REFRESH"},
            {"access", jwt({{"exp", 1900000000}, {"https://api.openai.com/auth", {{"chatgpt_plan_type", "plus"}}}})},
            {"expires", 1'900'000'000'000},
            {"accountId", "acct-1"}}},
          {"anthropic", {{"type", "api"}, {"key", "sk-ant-api03-OTHER-PROVIDER"}}},
          {"github-copilot", {{"type", "oauth"}, {"refresh", "gho_OTHER"}, {"access", "gho_OTHER"}, {"expires", 0}}}};
}

TEST(AgentLogin, OpenCodesAuthFileGivesOnlyItsChatGptLogin) {
  auto login = loginFromCredentialFile("opencode-oauth", opencodeAuth().dump());
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->kind, AgentLogin::Kind::kSubscription);
  EXPECT_EQ(login->refreshToken, "rt_REAL-REFRESH");
  EXPECT_EQ(login->expiresAtMs, 1'900'000'000'000);
  EXPECT_EQ(login->subscriptionType, "plus");  // from the access token's claims
  EXPECT_EQ(json::parse(login->accountJson), (json{{"accountId", "acct-1"}}));
  EXPECT_TRUE(entersVm("opencode-oauth"));
  EXPECT_TRUE(rotatesRefreshToken("opencode-oauth"));
  for (const char* other : {"claude-oauth", "gemini-oauth", "codex-oauth"}) EXPECT_FALSE(entersVm(other)) << other;
  // Other providers' entries are not kept.
  const std::string stored = serializeLogin(*login);
  EXPECT_EQ(stored.find("OTHER"), std::string::npos) << stored;
  // Without a ChatGPT OAuth entry there is no login: an API key goes in by --env.
  for (const json& bad : {json{{"openai", {{"type", "api"}, {"key", "sk-x"}}}}, json{{"anthropic", opencodeAuth()["anthropic"]}},
                          json::array(), json{{"openai", {{"type", "oauth"}, {"refresh", "r"}, {"access", "a b"}}}}}) {
    auto r = loginFromCredentialFile("opencode-oauth", bad.dump());
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().code, exit_code::kUsage);
  }
  EXPECT_FALSE(loginFromToken("opencode-oauth", "sk-whatever-0123456789"));
}

// The file's expiry and account are the writer's (a hostile guest's, for
// a login read back from the VM); OpenAI's access token has the last word.
TEST(AgentLogin, OpenCodesExpiryAndAccountAreTheAccessTokensWhenItNamesThem) {
  json doc = opencodeAuth();
  doc["openai"]["expires"] = 9'990'000'000'000;  // year 2286: never refreshed again
  auto login = loginFromCredentialFile("opencode-oauth", doc.dump());
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->expiresAtMs, 1'900'000'000'000);
  doc["openai"].erase("expires");
  login = loginFromCredentialFile("opencode-oauth", doc.dump());
  ASSERT_TRUE(login) << login.error().message;
  EXPECT_EQ(login->expiresAtMs, 1'900'000'000'000);
  // Another account's token under this accountId is refused.
  doc = opencodeAuth();
  doc["openai"]["access"] =
      jwt({{"exp", 1900000000}, {"https://api.openai.com/auth", {{"chatgpt_account_id", "acct-ATTACKER"}}}});
  auto refused = loginFromCredentialFile("opencode-oauth", doc.dump());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not the account its access token names"), std::string::npos);
  doc["openai"]["access"] = jwt({{"exp", 1900000000}, {"https://api.openai.com/auth", {{"chatgpt_account_id", "acct-1"}}}});
  EXPECT_TRUE(loginFromCredentialFile("opencode-oauth", doc.dump()));
}

// `airlock login` says whose login it stored (a login made in a VM could
// be anyone's): the e-mail address where the account names one.
TEST(AgentLogin, TheAccountNameIsTheEmailElseTheId) {
  auto named = [](const std::string& accountJson) {
    AgentLogin login;
    login.accountJson = accountJson;
    return loginAccountName(login);
  };
  EXPECT_EQ(named(R"({"accountUuid":"u-1","emailAddress":"me@example.com"})"), "me@example.com");
  EXPECT_EQ(named(R"({"email":"c@example.com","account_id":"acct-2"})"), "c@example.com");
  EXPECT_EQ(named(R"({"active":"g@example.com","old":[]})"), "g@example.com");
  EXPECT_EQ(named(R"({"accountId":"acct-1"})"), "acct-1");
  EXPECT_EQ(named(""), "");
  EXPECT_EQ(named(R"({"emailAddress":7})"), "");
}

TEST(AgentLogin, TheFileThatEntersTheVmIsOpenCodesOwnWithTheRealTokensAndNothingElse) {
  auto login = loginFromCredentialFile("opencode-oauth", opencodeAuth().dump());
  ASSERT_TRUE(login);
  auto file = credentialFile(*login);
  ASSERT_TRUE(file);
  json doc = json::parse(*file);
  EXPECT_EQ(doc, (json{{"openai",
                        {{"type", "oauth"},
                         {"refresh", "rt_REAL-REFRESH"},
                         {"access", opencodeAuth()["openai"]["access"]},
                         {"expires", 1'900'000'000'000},
                         {"accountId", "acct-1"}}}}));
  // Read back, it is the same login.
  auto again = loginFromCredentialFile("opencode-oauth", *file);
  ASSERT_TRUE(again);
  EXPECT_EQ(serializeLogin(*again), serializeLogin(*login));
  // Brokered formats never have one: their tokens stay on the host.
  EXPECT_FALSE(credentialFile(subscription()));
  EXPECT_FALSE(placeholderCredentialFile(*login));
}

}  // namespace
}  // namespace airlock::secrets
