#include "secrets/agent_login.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "common/exit_codes.h"

namespace airlock::secrets {
namespace {

using nlohmann::json;

/// The longest token prefix a placeholder keeps ("sk-ant-oat01-" is 13).
constexpr size_t kMaxPlaceholderPrefix = 16;

/// 2100-01-01T00:00:00Z in ms: the placeholder's expiry.
constexpr int64_t kFarFutureMs = 4102444800000;

/// Tokens are printable ASCII without spaces (they go into HTTP headers).
bool isTokenText(std::string_view s) {
  if (s.empty() || s.size() > kMaxTokenBytes) return false;
  for (unsigned char c : s)
    if (c <= 0x20 || c >= 0x7f) return false;
  return true;
}

std::string optionalString(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// RFC 4648 section 5 (base64url, no padding) to bytes; nullopt when not base64url.
std::optional<std::string> base64UrlDecode(std::string_view text) {
  if (text.size() > 64 * 1024) return std::nullopt;
  std::string b64(text);
  for (char& c : b64) {
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
    else if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
  }
  if (b64.size() % 4 == 1) return std::nullopt;
  size_t pad = (4 - b64.size() % 4) % 4;
  b64.append(pad, '=');
  std::string out(b64.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(b64.data()),
                          static_cast<int>(b64.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string base64UrlEncode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

/// The claims (payload) of JWT `token`, not verified; null when not a JWT.
json jwtClaims(std::string_view token) {
  size_t first = token.find('.');
  size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos) return nullptr;
  auto payload = base64UrlDecode(token.substr(first + 1, second - first - 1));
  if (!payload) return nullptr;
  json claims = json::parse(*payload, nullptr, false);
  return claims.is_object() ? claims : json(nullptr);
}

/// The members of `object` that are short scalars (strings of at most 256
/// bytes, numbers, booleans; names of at most 64 bytes).
json shortScalars(const json& object) {
  json kept = json::object();
  if (!object.is_object()) return kept;
  for (const auto& [name, value] : object.items()) {
    if (name.size() > 64) continue;
    if (value.is_string() && value.get_ref<const std::string&>().size() <= 256) kept[name] = value;
    if (value.is_number() || value.is_boolean()) kept[name] = value;
  }
  return kept;
}

/// The claim of OpenAI's id token that carries the ChatGPT account and plan.
constexpr const char* kOpenAiAuthClaim = "https://api.openai.com/auth";

Result<> checkFormat(std::string_view format) {
  if (!knownLoginFormat(format)) return failWith(exit_code::kUsage, "unknown login format '{}'", format);
  return {};
}

Result<AgentLogin> checkedTokens(AgentLogin login) {
  if (!isTokenText(login.accessToken) || (!login.refreshToken.empty() && !isTokenText(login.refreshToken)))
    return failWith(exit_code::kUsage, "the credential file's tokens are missing or not plain ASCII");
  login.kind = login.refreshToken.empty() ? AgentLogin::Kind::kToken : AgentLogin::Kind::kSubscription;
  return login;
}

/// Refuses what is not a Claude login's access token: an Anthropic API key
/// ("sk-ant-api..."), or anything without the OAuth token prefix
/// ("sk-ant-oat", what `claude` and `claude setup-token` make).
Result<> checkClaudeToken(std::string_view token) {
  if (token.starts_with("sk-ant-oat")) return {};
  if (token.starts_with("sk-ant-api"))
    return failWith(exit_code::kUsage, "that is an Anthropic API key, not a Claude login: an API key goes in with "
                                       "--env ANTHROPIC_API_KEY (a login token, from `claude setup-token`, starts "
                                       "with sk-ant-oat01-)");
  return failWith(exit_code::kUsage, "that is not a Claude login token (they start with sk-ant-oat01-; "
                                     "`claude setup-token` makes one)");
}

/// Claude Code's .credentials.json (claudeAiOauth).
Result<AgentLogin> claudeLogin(const json& doc) {
  const json* oauth = nullptr;
  if (doc.is_object())
    if (auto it = doc.find("claudeAiOauth"); it != doc.end() && it->is_object()) oauth = &*it;
  if (!oauth)
    return failWith(exit_code::kUsage, "the credential file has no Claude subscription login (claudeAiOauth); "
                                       "log in with `claude` on this machine first");
  AgentLogin login;
  login.format = "claude-oauth";
  login.accessToken = optionalString(*oauth, "accessToken");
  login.refreshToken = optionalString(*oauth, "refreshToken");
  if (auto it = oauth->find("expiresAt"); it != oauth->end() && it->is_number_integer())
    login.expiresAtMs = it->get<int64_t>();
  if (auto it = oauth->find("scopes"); it != oauth->end() && it->is_array())
    for (const auto& s : *it)
      if (s.is_string() && s.get_ref<const std::string&>().size() < 128) login.scopes.push_back(s.get<std::string>());
  auto plain = [](std::string s) { return s.size() <= 64 && isTokenText(s) ? s : std::string(); };
  login.subscriptionType = plain(optionalString(*oauth, "subscriptionType"));
  login.rateLimitTier = plain(optionalString(*oauth, "rateLimitTier"));
  auto checked = checkedTokens(std::move(login));
  if (checked)
    if (auto ok = checkClaudeToken(checked->accessToken); !ok) return std::unexpected(ok.error());
  return checked;
}

/// Gemini CLI's oauth_creds.json (google-auth-library's Credentials).
Result<AgentLogin> geminiLogin(const json& doc) {
  if (!doc.is_object() || !doc.contains("access_token"))
    return failWith(exit_code::kUsage, "the credential file has no Google login (access_token); "
                                       "log in with `gemini` on this machine first");
  AgentLogin login;
  login.format = "gemini-oauth";
  login.accessToken = optionalString(doc, "access_token");
  login.refreshToken = optionalString(doc, "refresh_token");
  // Milliseconds; within ±300 years so that it stays an int64 and a date.
  if (auto it = doc.find("expiry_date"); it != doc.end() && it->is_number() && std::abs(it->get<double>()) < 1e13)
    login.expiresAtMs = static_cast<int64_t>(it->get<double>());
  if (login.refreshToken.empty())
    return failWith(exit_code::kUsage, "the credential file has no refresh_token, and its access token expires within "
                                       "the hour; log in with `gemini` on this machine again (or: airlock login gemini)");
  std::string scope = optionalString(doc, "scope");
  for (size_t start = 0; start < scope.size() && login.scopes.size() < 32;) {
    size_t end = std::min(scope.find(' ', start), scope.size());
    if (end > start && end - start < 128) login.scopes.push_back(scope.substr(start, end - start));
    start = end + 1;
  }
  return checkedTokens(std::move(login));
}

/// Codex's auth.json (a ChatGPT login).
Result<AgentLogin> codexLogin(const json& doc) {
  const json* tokens = nullptr;
  if (doc.is_object())
    if (auto it = doc.find("tokens"); it != doc.end() && it->is_object()) tokens = &*it;
  if (!tokens)
    return failWith(exit_code::kUsage, "the credential file has no ChatGPT login (tokens); log in with `codex login` "
                                       "on this machine first (an API key goes in with --env CODEX_API_KEY)");
  AgentLogin login;
  login.format = "codex-oauth";
  login.accessToken = optionalString(*tokens, "access_token");
  login.refreshToken = optionalString(*tokens, "refresh_token");
  login.expiresAtMs = jwtExpiryMs(login.accessToken);
  if (optionalString(*tokens, "refresh_token").empty())
    return failWith(exit_code::kUsage, "the credential file's ChatGPT login has no refresh_token; log in with `codex "
                                       "login` on this machine again (or: airlock login codex)");
  json claims = jwtClaims(optionalString(*tokens, "id_token"));
  json account = json::object();
  if (claims.is_object()) {
    if (auto it = claims.find("email"); it != claims.end() && it->is_string() && it->get_ref<const std::string&>().size() <= 256)
      account["email"] = *it;
    if (auto it = claims.find(kOpenAiAuthClaim); it != claims.end()) account["auth"] = shortScalars(*it);
  }
  std::string accountId = optionalString(*tokens, "account_id");
  if (!accountId.empty() && accountId.size() <= 256 && isTokenText(accountId)) account["account_id"] = accountId;
  if (!account.empty()) login.accountJson = account.dump();
  std::string plan = account.contains("auth") ? optionalString(account["auth"], "chatgpt_plan_type") : "";
  login.subscriptionType = plan.size() <= 64 && isTokenText(plan) ? plan : "";
  return checkedTokens(std::move(login));
}

/// OpenCode's auth.json: its ChatGPT login (the "openai" provider's OAuth entry).
Result<AgentLogin> opencodeLogin(const json& doc) {
  const json* entry = nullptr;
  if (doc.is_object())
    if (auto it = doc.find("openai"); it != doc.end() && it->is_object() && optionalString(*it, "type") == "oauth")
      entry = &*it;
  if (!entry)
    return failWith(exit_code::kUsage, "the credential file has no ChatGPT login (an \"openai\" oauth entry); log in "
                                       "with `opencode auth login` on this machine first (an API key goes in with "
                                       "--env OPENAI_API_KEY)");
  AgentLogin login;
  login.format = "opencode-oauth";
  login.accessToken = optionalString(*entry, "access");
  login.refreshToken = optionalString(*entry, "refresh");
  if (auto it = entry->find("expires"); it != entry->end() && it->is_number() && std::abs(it->get<double>()) < 1e13)
    login.expiresAtMs = static_cast<int64_t>(it->get<double>());
  // The access token, when it is OpenAI's JWT, has the last word on when
  // it expires and whose it is (the file's fields are the writer's).
  if (auto exp = jwtExpiryMs(login.accessToken); exp && (!login.expiresAtMs || *exp < *login.expiresAtMs))
    login.expiresAtMs = exp;
  std::string accountId = optionalString(*entry, "accountId");
  json claims = jwtClaims(login.accessToken);
  if (auto it = claims.is_object() ? claims.find(kOpenAiAuthClaim) : claims.end(); it != claims.end() && it->is_object()) {
    std::string plan = optionalString(*it, "chatgpt_plan_type");
    login.subscriptionType = plan.size() <= 64 && isTokenText(plan) ? plan : "";
    std::string tokenAccount = optionalString(*it, "chatgpt_account_id");
    if (!tokenAccount.empty() && tokenAccount != accountId)
      return failWith(exit_code::kUsage, "the credential file's accountId is not the account its access token names");
  }
  if (!accountId.empty() && accountId.size() <= 256 && isTokenText(accountId))
    login.accountJson = json{{"accountId", accountId}}.dump();
  return checkedTokens(std::move(login));
}

}  // namespace

std::string loginSecretName(std::string_view agent) { return "login." + std::string(agent); }

bool knownLoginFormat(std::string_view format) {
  return format == "claude-oauth" || format == "gemini-oauth" || format == "codex-oauth" || format == "opencode-oauth" ||
         format == "token";
}

std::optional<int64_t> jwtExpiryMs(std::string_view token) {
  json claims = jwtClaims(token);
  auto exp = claims.is_object() ? claims.find("exp") : claims.end();
  if (exp == claims.end() || !exp->is_number()) return std::nullopt;
  double s = exp->get<double>();
  if (!(s >= 0 && s < 253402300800.0)) return std::nullopt;  // before year 10000
  return static_cast<int64_t>(s) * 1000;
}

bool rotatesRefreshToken(std::string_view format) { return format == "claude-oauth" || format == "opencode-oauth"; }

bool entersVm(std::string_view format) { return format == "opencode-oauth" || format == "token"; }

std::string serializeLogin(const AgentLogin& login) {
  json o = {{"kind", login.kind == AgentLogin::Kind::kSubscription ? "subscription" : "token"},
            {"format", login.format},
            {"accessToken", login.accessToken}};
  if (!login.refreshToken.empty()) o["refreshToken"] = login.refreshToken;
  if (login.expiresAtMs) o["expiresAt"] = *login.expiresAtMs;
  if (!login.scopes.empty()) o["scopes"] = login.scopes;
  if (!login.subscriptionType.empty()) o["subscriptionType"] = login.subscriptionType;
  if (!login.rateLimitTier.empty()) o["rateLimitTier"] = login.rateLimitTier;
  if (json account = json::parse(login.accountJson, nullptr, false); account.is_object()) o["account"] = account;
  return o.dump();
}

Result<AgentLogin> parseLogin(std::string_view value) {
  json o = json::parse(value, nullptr, false);
  const auto bad = [] { return fail("the stored login is not airlock's; run `airlock login` again"); };
  if (!o.is_object()) return bad();
  AgentLogin login;
  std::string kind = optionalString(o, "kind");
  if (kind != "subscription" && kind != "token") return bad();
  login.kind = kind == "subscription" ? AgentLogin::Kind::kSubscription : AgentLogin::Kind::kToken;
  login.format = optionalString(o, "format");
  login.accessToken = optionalString(o, "accessToken");
  login.refreshToken = optionalString(o, "refreshToken");
  if (!checkFormat(login.format) || !isTokenText(login.accessToken)) return bad();
  if (!login.refreshToken.empty() && !isTokenText(login.refreshToken)) return bad();
  if (auto it = o.find("expiresAt"); it != o.end() && it->is_number_integer()) login.expiresAtMs = it->get<int64_t>();
  if (auto it = o.find("scopes"); it != o.end() && it->is_array())
    for (const auto& s : *it)
      if (s.is_string()) login.scopes.push_back(s.get<std::string>());
  login.subscriptionType = optionalString(o, "subscriptionType");
  login.rateLimitTier = optionalString(o, "rateLimitTier");
  if (auto it = o.find("account"); it != o.end() && it->is_object()) login.accountJson = it->dump();
  return login;
}

std::string accountFromFile(std::string_view content, const std::string& key) {
  json doc = json::parse(content, nullptr, false);
  if (!doc.is_object()) return "";
  const json* account = &doc;
  if (!key.empty()) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_object()) return "";
    account = &*it;
  }
  json kept = shortScalars(*account);
  return kept.empty() ? "" : kept.dump();
}

std::string withAccount(std::string_view seed, const std::string& key, const AgentLogin& login) {
  json doc = seed.empty() ? json::object() : json::parse(seed, nullptr, false);
  if (!doc.is_object()) doc = json::object();
  json account = json::parse(login.accountJson, nullptr, false);
  if (!account.is_object()) return doc.dump();
  // Whatever the account holds, the login's own tokens never go into the VM.
  for (auto it = account.begin(); it != account.end();) {
    const std::string text = it->dump();
    bool token = text.find(login.accessToken) != std::string::npos ||
                 (!login.refreshToken.empty() && text.find(login.refreshToken) != std::string::npos);
    it = token ? account.erase(it) : std::next(it);
  }
  if (key.empty()) doc.update(account);
  else doc[key] = account;
  return doc.dump();
}

Result<AgentLogin> loginFromCredentialFile(std::string_view format, std::string_view content) {
  if (auto ok = checkFormat(format); !ok) return std::unexpected(ok.error());
  if (content.size() > kMaxCredentialFileBytes)
    return failWith(exit_code::kUsage, "the credential file is over {} KiB; not a login", kMaxCredentialFileBytes / 1024);
  if (format == "token")
    return failWith(exit_code::kUsage, "a token login has no credential file to import: pipe the token in, or "
                                       "name its variable with --from-env");
  json doc = json::parse(content, nullptr, false);
  if (doc.is_discarded())
    return failWith(exit_code::kUsage, "the credential file is not JSON (cut short, or not UTF-8); log in with the "
                                       "agent again, or sign in inside a VM with airlock login");
  if (format == "gemini-oauth") return geminiLogin(doc);
  if (format == "codex-oauth") return codexLogin(doc);
  if (format == "opencode-oauth") return opencodeLogin(doc);
  return claudeLogin(doc);
}

Result<AgentLogin> loginFromToken(std::string_view format, std::string_view token) {
  if (auto ok = checkFormat(format); !ok) return std::unexpected(ok.error());
  if (format == "codex-oauth" || format == "opencode-oauth")
    return failWith(exit_code::kUsage, "a ChatGPT login is imported with --from-host (a bare token lacks the account); "
                                       "an API key goes in with --env {}", format == "codex-oauth" ? "CODEX_API_KEY" : "OPENAI_API_KEY");
  if (format == "gemini-oauth")
    return failWith(exit_code::kUsage, "a Google login is imported with --from-host (a bare access token expires "
                                       "within the hour); an API key goes in with --env GEMINI_API_KEY");
  if (token.ends_with('\n')) token.remove_suffix(1);
  if (token.ends_with('\r')) token.remove_suffix(1);
  if (!isTokenText(token))
    return failWith(exit_code::kUsage, "the token must be 1 to {} printable characters without spaces", kMaxTokenBytes);
  if (format == "claude-oauth")
    if (auto ok = checkClaudeToken(token); !ok) return std::unexpected(ok.error());
  AgentLogin login;
  login.kind = AgentLogin::Kind::kToken;
  login.format = std::string(format);
  login.accessToken = std::string(token);
  login.expiresAtMs = jwtExpiryMs(login.accessToken);  // a JWT carries its own end
  return login;
}

std::string describeLogin(const AgentLogin& login) {
  if (login.kind == AgentLogin::Kind::kToken) return "long-lived token";
  return login.subscriptionType.empty() ? "account" : "subscription (" + login.subscriptionType + ")";
}

std::string loginAccountName(const AgentLogin& login) {
  json account = json::parse(login.accountJson, nullptr, false);
  if (!account.is_object()) return "";
  for (const char* key : {"emailAddress", "email", "active", "accountId", "account_id"})
    if (auto it = account.find(key); it != account.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
      return it->get<std::string>();
  return "";
}

std::string placeholderToken(const AgentLogin& login) {
  const std::string& real = login.accessToken;
  size_t first = real.find('-');
  size_t second = first == std::string::npos ? first : real.find('-', first + 1);
  size_t third = second == std::string::npos ? second : real.find('-', second + 1);
  std::string prefix = third == std::string::npos ? std::string() : real.substr(0, third + 1);
  // Only a kind prefix like "sk-ant-oat01-" is kept: short, lowercase, and
  // followed by the secret. Of a token shaped otherwise ("a-b-c-", or long
  // segments before the third '-') the prefix would be the token, or most of it.
  bool kindPrefix = prefix.size() <= kMaxPlaceholderPrefix && prefix.size() + 8 <= real.size();
  for (char c : prefix) kindPrefix = kindPrefix && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  return (kindPrefix ? prefix : std::string()) + std::string(kPlaceholderMark);
}

std::optional<std::string> placeholderCredentialFile(const AgentLogin& login) {
  if (login.format == "codex-oauth") {
    json account = json::parse(login.accountJson, nullptr, false);
    if (!account.is_object()) account = json::object();
    // Codex reads the plan and the account from the id token's claims and
    // checks no signature: an unsigned token with the kept claims.
    json claims = {{"iss", "airlock"}, {"aud", kPlaceholderMark}, {"iat", 0}, {"exp", kFarFutureMs / 1000},
                   {kOpenAiAuthClaim, account.value("auth", json::object())}};
    if (account.contains("email")) claims["email"] = account["email"];
    const std::string idToken = base64UrlEncode(R"({"alg":"none","typ":"JWT"})") + "." + base64UrlEncode(claims.dump()) +
                                "." + base64UrlEncode(kPlaceholderMark);
    json tokens = {{"id_token", idToken},
                   {"access_token", placeholderToken(login)},
                   {"refresh_token", "rt_" + std::string(kPlaceholderMark)},
                   {"account_id", account.value("account_id", "")}};
    return json{{"auth_mode", "chatgpt"}, {"OPENAI_API_KEY", nullptr}, {"tokens", tokens},
                {"last_refresh", "2100-01-01T00:00:00Z"}}
        .dump();
  }
  if (login.format != "claude-oauth") return std::nullopt;
  json oauth = {{"accessToken", placeholderToken(login)},
                {"refreshToken", "sk-ant-ort01-" + std::string(kPlaceholderMark)},
                {"expiresAt", kFarFutureMs},
                {"scopes", login.scopes}};
  if (!login.subscriptionType.empty()) oauth["subscriptionType"] = login.subscriptionType;
  if (!login.rateLimitTier.empty()) oauth["rateLimitTier"] = login.rateLimitTier;
  return json{{"claudeAiOauth", oauth}}.dump();
}

std::optional<std::string> credentialFile(const AgentLogin& login) {
  if (login.format != "opencode-oauth") return std::nullopt;
  json entry = {{"type", "oauth"}, {"refresh", login.refreshToken}, {"access", login.accessToken},
                {"expires", login.expiresAtMs.value_or(0)}};
  json account = json::parse(login.accountJson, nullptr, false);
  if (account.is_object() && account.contains("accountId")) entry["accountId"] = account["accountId"];
  return json{{"openai", entry}}.dump();
}

}  // namespace airlock::secrets
