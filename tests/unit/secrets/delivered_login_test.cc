#include "secrets/delivered_login.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "secrets/file_backend.h"
#include "support/scratch.h"

namespace airlock::secrets {
namespace {

using nlohmann::json;

constexpr const char* kAgent = "opencode";
constexpr int64_t kNowMs = 1'800'000'000'000;

class FixedClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override { return std::chrono::system_clock::time_point{std::chrono::milliseconds(kNowMs)}; }
};

/// OpenCode's auth.json as the agent leaves it.
std::string authFile(const std::string& refresh, const std::string& access, int64_t expires,
                     const std::string& account = "acct-1") {
  return json{{"openai", {{"type", "oauth"}, {"refresh", refresh}, {"access", access}, {"expires", expires},
                          {"accountId", account}}}}
      .dump();
}

// What the guest hands back after the agent ran: the same login, a
// refreshed one, or anything a hostile guest writes there.
class DeliveredLoginTest : public ::testing::Test {
 protected:
  DeliveredLoginTest() : dir_(test::scratchDir("airlock-delivered-login-")), file_(dir_.path() + "/data/secrets") {
    auto login = loginFromCredentialFile("opencode-oauth", authFile("rt_OLD", "OLD-ACCESS", kNowMs - 1000));
    EXPECT_TRUE(login);
    delivered_ = *login;
    put(delivered_);
  }
  SecretStore store() { return SecretStore(dir_.path() + "/data/secrets.json", {{"file", &file_}}, file_, clock_); }
  void put(const AgentLogin& login) {
    auto s = store();
    std::string note;
    ASSERT_TRUE(s.set(loginSecretName(kAgent), serializeLogin(login), "test", std::nullopt, note));
  }
  AgentLogin stored() {
    auto s = store();
    auto value = s.get(loginSecretName(kAgent));
    EXPECT_TRUE(value && *value);
    auto login = parseLogin(value && *value ? **value : "");
    EXPECT_TRUE(login);
    return login ? *login : AgentLogin();
  }
  Result<bool> keep(std::string_view returned) {
    auto s = store();
    return keepReturnedLogin(s, kAgent, delivered_, returned, dir_.path() + "/login.lock", clock_);
  }

  TempDir dir_;
  FileBackend file_;
  FixedClock clock_;
  AgentLogin delivered_;
};

TEST_F(DeliveredLoginTest, ALoginTheAgentRefreshedInTheVmReplacesTheSpentOne) {
  auto kept = keep(authFile("rt_NEW", "NEW-ACCESS", kNowMs + 3'600'000));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_TRUE(*kept);
  EXPECT_EQ(stored().refreshToken, "rt_NEW");
  EXPECT_EQ(stored().accessToken, "NEW-ACCESS");
  EXPECT_EQ(stored().expiresAtMs, kNowMs + 3'600'000);
}

TEST_F(DeliveredLoginTest, AnUnchangedLoginIsNotStoredAgain) {
  auto kept = keep(*credentialFile(delivered_));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_FALSE(*kept);
  EXPECT_EQ(stored().refreshToken, "rt_OLD");
}

// A hostile guest cannot make the store hold something that is not a
// refreshed copy of the same login.
TEST_F(DeliveredLoginTest, WhatIsNotTheSameLoginRefreshedIsRefusedAndTheStoredOneStays) {
  const std::string garbage[] = {
      "",
      "not json",
      std::string(80 * 1024, '{'),
      json{{"openai", {{"type", "api"}, {"key", "sk-x"}}}}.dump(),
      authFile("rt_NEW\r\nX-Evil: 1", "NEW-ACCESS", kNowMs + 3'600'000),
      authFile("rt_NEW", "NEW-ACCESS", kNowMs + 3'600'000, "acct-ATTACKER"),  // another account
      authFile("rt_NEW", "NEW-ACCESS", kNowMs - 2000),                        // new tokens, older expiry
      authFile("rt_NEW", "NEW-ACCESS", 9'990'000'000'000),                    // pinned till 2286
      authFile("rt_NEW", "NEW-ACCESS", kNowMs + kMaxReturnedLifetimeMs + 1),   // past any token's life
      json{{"openai", {{"type", "oauth"}, {"refresh", "rt_NEW"}, {"access", "NEW"}, {"accountId", "acct-1"}}}}.dump(),
  };
  for (const auto& returned : garbage) {
    auto kept = keep(returned);
    EXPECT_FALSE(kept) << returned.substr(0, 200);
    EXPECT_EQ(stored().refreshToken, "rt_OLD") << returned.substr(0, 200);
  }
}

// Two sessions got the same login; the first to come back stored its
// refresh. The second's is refused (told), however late it expires: the
// store no longer holds what that session was given.
TEST_F(DeliveredLoginTest, ALoginStoredSinceTheDeliveryIsNeverOverwritten) {
  auto first = keep(authFile("rt_FIRST", "FIRST", kNowMs + 7'200'000));
  ASSERT_TRUE(first && *first);
  for (int64_t expires : {kNowMs + 3'600'000, kNowMs + 9'000'000}) {
    auto second = keep(authFile("rt_SECOND", "SECOND", expires));
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message.find("changed while the agent ran"), std::string::npos);
    EXPECT_EQ(stored().refreshToken, "rt_FIRST");
  }
}

// The user switched accounts (or logged in again) while a session ran:
// the session's agent, prompt-injected or not, cannot undo it.
TEST_F(DeliveredLoginTest, ANewLoginDuringTheRunIsNotUndoneByTheSession) {
  auto other = loginFromCredentialFile("opencode-oauth", authFile("rt_B", "B-ACCESS", kNowMs + 600'000, "acct-B"));
  ASSERT_TRUE(other);
  put(*other);
  auto kept = keep(authFile("rt_ATTACKER", "ATTACKER", kNowMs + 20LL * 86'400'000));
  ASSERT_FALSE(kept);
  EXPECT_EQ(stored().refreshToken, "rt_B");
}

TEST_F(DeliveredLoginTest, ALoginRemovedDuringTheRunIsNotBroughtBack) {
  auto s = store();
  std::string note;
  ASSERT_TRUE(s.remove(loginSecretName(kAgent), note));
  auto kept = keep(authFile("rt_NEW", "NEW-ACCESS", kNowMs + 3'600'000));
  ASSERT_FALSE(kept);
  EXPECT_NE(kept.error().message.find("logout"), std::string::npos);
  auto value = store().get(loginSecretName(kAgent));
  ASSERT_TRUE(value);
  EXPECT_FALSE(*value);
}

}  // namespace
}  // namespace airlock::secrets
