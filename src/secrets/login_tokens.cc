#include "secrets/login_tokens.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_lock.h"

namespace airlock::secrets {
namespace {

using nlohmann::json;

constexpr size_t kMaxResponseBytes = 1 << 20;
/// The longest expires_in taken from a refresh answer (10 years).
constexpr double kMaxExpiresInS = 10.0 * 365 * 24 * 3600;

size_t collect(char* data, size_t size, size_t count, void* out) {
  auto* body = static_cast<std::string*>(out);
  size_t n = size * count;
  if (body->size() + n > kMaxResponseBytes) return 0;
  body->append(data, n);
  return n;
}

/// `value` percent-encoded for a form body (RFC 3986 unreserved characters kept).
std::string formEncoded(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace

RefreshRequest refreshRequest(const AgentLogin& login, const RefreshEndpoint& endpoint) {
  if (login.format == "gemini-oauth") {
    std::string body;
    for (auto [name, value] : {std::pair{"grant_type", std::string("refresh_token")},
                               std::pair{"refresh_token", login.refreshToken}, std::pair{"client_id", endpoint.clientId},
                               std::pair{"client_secret", endpoint.clientSecret}})
      if (!value.empty()) body += (body.empty() ? "" : "&") + std::string(name) + "=" + formEncoded(value);
    return {"application/x-www-form-urlencoded", body};
  }
  std::string scope;
  for (const auto& s : login.scopes) scope += (scope.empty() ? "" : " ") + s;
  json request = {{"grant_type", "refresh_token"}, {"refresh_token", login.refreshToken},
                  {"client_id", endpoint.clientId}};
  if (!scope.empty() && login.format == "claude-oauth") request["scope"] = scope;
  return {"application/json", request.dump()};
}

LoginTokens::LoginTokens(SecretStore& store, std::string agent, RefreshEndpoint endpoint, HttpPoster post,
                         std::string lockPath, const Clock& clock)
    : store_(store), agent_(std::move(agent)), endpoint_(std::move(endpoint)), post_(std::move(post)),
      lockPath_(std::move(lockPath)), clock_(clock) {}

int64_t LoginTokens::nowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().time_since_epoch()).count();
}

bool LoginTokens::expiring() const {
  return !login_.refreshToken.empty() && login_.expiresAtMs && *login_.expiresAtMs < nowMs() + kRefreshMarginMs;
}

Result<> LoginTokens::load() {
  auto stored = store_.get(loginSecretName(agent_));
  if (!stored) return std::unexpected(stored.error());
  if (!*stored) return fail("no login stored for {}; run `airlock login {}`", agent_, agent_);
  auto login = parseLogin(**stored);
  if (!login) return std::unexpected(login.error());
  login_ = std::move(*login);
  return {};
}

Result<std::string> LoginTokens::token() {
  std::lock_guard guard(mutex_);
  if (expiring())
    if (auto r = refresh(); !r) return std::unexpected(r.error());
  return login_.accessToken;
}

Result<std::string> LoginTokens::replaceRejected(const std::string& rejected) {
  std::lock_guard guard(mutex_);
  if (login_.accessToken != rejected) return login_.accessToken;  // another request already replaced it
  if (login_.refreshToken.empty())
    return fail("the API refused the stored {} token, which cannot be refreshed; run `airlock login {}`", agent_,
                agent_);
  if (refreshedAtMs_ && nowMs() - *refreshedAtMs_ < kMinRejectedRefreshGapMs)
    return fail("the API refused the {} token refreshed {} s ago; run `airlock login {}`", agent_,
                (nowMs() - *refreshedAtMs_) / 1000, agent_);
  const std::string before = login_.accessToken;
  if (auto r = refresh(); !r) return std::unexpected(r.error());
  if (login_.accessToken == before) return fail("refreshing the {} login gave the same token", agent_);
  return login_.accessToken;
}

Result<> LoginTokens::refresh() {
  auto lock = FileLock::acquire(lockPath_, "refreshing " + agent_ + "'s login", nullptr);
  if (!lock) return std::unexpected(lock.error());
  const std::string mine = login_.accessToken;
  if (auto r = load(); !r) return r;
  // Another session refreshed while this one waited: its token is the one
  // to use (the refresh token this session had may be spent).
  if (login_.accessToken != mine && !expiring()) return {};
  if (login_.refreshToken.empty())
    return fail("the {} login cannot be refreshed (no refresh token); run `airlock login {}`", agent_, agent_);
  auto response = post_(endpoint_.url, refreshRequest(login_, endpoint_));
  if (!response) return fail("cannot refresh the {} login: {}", agent_, response.error().message);
  const auto& [status, body] = *response;
  json answer = json::parse(body, nullptr, false);
  auto access = answer.is_object() ? answer.find("access_token") : answer.end();
  if (status != 200 || access == answer.end() || !access->is_string())
    return fail("refreshing the {} login failed (HTTP {}); run `airlock login {}`", agent_, status, agent_);
  AgentLogin next = login_;
  next.accessToken = access->get<std::string>();
  // An empty or missing refresh token keeps the stored one (Google never sends a new one).
  if (auto it = answer.find("refresh_token"); it != answer.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
    next.refreshToken = it->get<std::string>();
  if (auto it = answer.find("expires_in"); it != answer.end() && it->is_number())
    // Within [0, 10 years]: a larger number would overflow int64 ms (and come out in the past).
    next.expiresAtMs = nowMs() + static_cast<int64_t>(std::clamp(it->get<double>(), 0.0, kMaxExpiresInS) * 1000);
  else  // Codex's answer has none: the access token is a JWT with its own expiry
    next.expiresAtMs = jwtExpiryMs(next.accessToken);
  auto checked = parseLogin(serializeLogin(next));  // the same checks as a stored login
  if (!checked) return fail("the {} refresh answered tokens airlock cannot use", agent_);
  std::string note;
  if (auto r = store_.set(loginSecretName(agent_), serializeLogin(next), "refreshed", std::nullopt, note); !r)
    return fail("the {} login was refreshed but could not be stored: {}", agent_, r.error().message);
  login_ = std::move(next);
  refreshedAtMs_ = nowMs();
  return {};
}

HttpPoster curlPoster(std::string caFile) {
  return [caFile](const std::string& url, const RefreshRequest& request) -> Result<std::pair<long, std::string>> {
    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) return fail("cannot start libcurl");
    const std::string& body = request.body;
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(
        curl_slist_append(nullptr, ("Content-Type: " + request.contentType).c_str()), curl_slist_free_all);
    std::string answer;
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &answer);
    if (!caFile.empty()) curl_easy_setopt(curl.get(), CURLOPT_CAINFO, caFile.c_str());
    CURLcode rc = curl_easy_perform(curl.get());
    if (rc != CURLE_OK) return fail("{}", curl_easy_strerror(rc));
    long status = 0;
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
    return std::pair{status, answer};
  };
}

}  // namespace airlock::secrets
