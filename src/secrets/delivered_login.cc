#include "secrets/delivered_login.h"

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
                               std::string_view returned, const std::string& lockPath) {
  auto parsed = loginFromCredentialFile(delivered.format, returned);
  if (!parsed) return fail("it is not a {} login: {}", delivered.format, parsed.error().message);
  AgentLogin next = std::move(*parsed);
  if (sameTokens(next, delivered)) return false;
  if (accountId(next) != accountId(delivered)) return fail("it names another account than the login given to it");
  if (!later(next, delivered)) return fail("its new tokens do not expire later than the ones given to it");
  if (next.subscriptionType.empty()) next.subscriptionType = delivered.subscriptionType;
  const std::string name = loginSecretName(agent);
  auto lock = FileLock::acquire(lockPath, std::string(agent) + "'s login refresh", nullptr);
  if (!lock) return std::unexpected(lock.error());
  auto stored = store.get(name);
  if (!stored) return std::unexpected(stored.error());
  if (!*stored) return fail("the login was removed meanwhile (airlock logout)");
  auto current = parseLogin(**stored);
  if (!current || current->format != delivered.format) return fail("the stored login was replaced meanwhile");
  // Another session (or a new `airlock login`) stored a login since this
  // one was delivered: only a later one replaces it.
  if (!sameTokens(*current, delivered) && !later(next, *current)) return false;
  std::string note;
  if (auto r = store.set(name, serializeLogin(next), "refreshed in the VM", std::nullopt, note); !r)
    return std::unexpected(r.error());
  return true;
}

}  // namespace airlock::secrets
