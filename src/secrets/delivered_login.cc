#include "secrets/delivered_login.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_lock.h"

namespace airlock::secrets {
namespace {

/// The account id a login names ("" when none).
std::string accountId(const AgentLogin& login) {
  nlohmann::json account = nlohmann::json::parse(login.accountJson, nullptr, false);
  if (!account.is_object()) return "";
  auto it = account.find("accountId");
  return it != account.end() && it->is_string() ? it->get<std::string>() : "";
}

bool sameTokens(const AgentLogin& a, const AgentLogin& b) {
  return a.accessToken == b.accessToken && a.refreshToken == b.refreshToken;
}

bool later(const AgentLogin& a, const AgentLogin& than) {
  return a.expiresAtMs && (!than.expiresAtMs || *a.expiresAtMs > *than.expiresAtMs);
}

}  // namespace

Result<bool> keepReturnedLogin(SecretStore& store, std::string_view agent, const AgentLogin& delivered,
                               std::string_view returned, const std::string& lockPath, const Clock& clock) {
  auto parsed = loginFromCredentialFile(delivered.format, returned);
  if (!parsed) return fail("it is not a {} login: {}", delivered.format, parsed.error().message);
  AgentLogin next = std::move(*parsed);
  if (sameTokens(next, delivered)) return false;
  if (accountId(next) != accountId(delivered)) return fail("it names another account than the login given to it");
  if (!later(next, delivered)) return fail("its new tokens do not expire later than the ones given to it");
  // The guest writes the expiry: one past any access token's lifetime
  // would keep a dead token from ever being refreshed again.
  const int64_t nowMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock.now().time_since_epoch()).count();
  if (*next.expiresAtMs > nowMs + kMaxReturnedLifetimeMs)
    return fail("its expiry is more than {} days away, longer than any access token lives",
                kMaxReturnedLifetimeMs / 86'400'000);
  if (next.subscriptionType.empty()) next.subscriptionType = delivered.subscriptionType;
  const std::string name = loginSecretName(agent);
  auto lock = FileLock::acquire(lockPath, "refreshing " + std::string(agent) + "'s login", nullptr);
  if (!lock) return std::unexpected(lock.error());
  auto stored = store.get(name);
  if (!stored) return std::unexpected(stored.error());
  if (!*stored) return fail("the login was removed meanwhile (airlock logout)");
  auto current = parseLogin(**stored);
  if (!current || current->format != delivered.format) return fail("the stored login was replaced meanwhile");
  // Another session or a new `airlock login` stored a login since this one
  // was delivered: that one stays (the guest never held it; an older
  // session must not undo a switch of accounts).
  if (!sameTokens(*current, delivered))
    return fail("the stored login changed while the agent ran (a new `airlock login`, or another session's refresh); "
                "that one stays");
  std::string note;
  if (auto r = store.set(name, serializeLogin(next), "refreshed in the VM", std::nullopt, note); !r)
    return std::unexpected(r.error());
  return true;
}

}  // namespace airlock::secrets
