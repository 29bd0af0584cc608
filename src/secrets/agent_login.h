#pragma once
// An agent's login as airlock keeps it on the host (`airlock login AGENT`,
// issue 15): the real tokens, stored as one secret ("login.AGENT") whose
// value is this struct as JSON. The guest only ever gets placeholders
// (placeholderCredentialFile, kPlaceholderToken); the credential broker
// (credential_broker.h) puts the real token on the wire.
//
// Formats (AgentSpec::login.format) airlock reads from an agent's own
// credential file (`--from-host`):
//   claude-oauth  Claude Code's .credentials.json:
//                 {"claudeAiOauth": {"accessToken": "sk-ant-oat01-...",
//                  "refreshToken": "sk-ant-ort01-...", "expiresAt": <ms>,
//                  "scopes": [...], "subscriptionType": "max", ...}}
//                 (facts: ../shared/agent-credentials.md, "Claude Code").
//                 The guest gets a placeholder copy of the file.
//   gemini-oauth  Gemini CLI's oauth_creds.json (google-auth-library's):
//                 {"access_token": "ya29...", "refresh_token": "1//...",
//                  "scope": "a b", "token_type": "Bearer", "id_token": ...,
//                  "expiry_date": <ms>}  (same facts file, "Gemini CLI").
//                 The guest gets no file: a placeholder in the token
//                 variable (GOOGLE_CLOUD_ACCESS_TOKEN), which Gemini uses
//                 without refreshing it.
//   codex-oauth   Codex's auth.json (ChatGPT login):
//                 {"auth_mode": "chatgpt", "tokens": {"id_token": <JWT>,
//                  "access_token": <JWT>, "refresh_token": "rt_...",
//                  "account_id": "..."}, "last_refresh": "<RFC 3339>"}.
//                 The expiry is the access token's JWT "exp"; the account
//                 (e-mail, plan, ids) comes from the id token's claims,
//                 which are kept, not the id token. The guest gets a
//                 placeholder auth.json with an unsigned id token carrying
//                 those claims (Codex reads the plan and account from it).
//   opencode-oauth OpenCode's auth.json, its ChatGPT login (the "openai"
//                 entry; API-key entries of other providers are not kept):
//                 {"openai": {"type": "oauth", "refresh": "...", "access":
//                  "...", "expires": <ms>, "accountId": "..."}}.
//                 OpenCode's ChatGPT endpoint cannot be moved to the
//                 broker: this login enters the VM (entersVm), as the
//                 agent's own file (credentialFile) on a tmpfs, and is read
//                 back when the agent exits (delivered_login.h).
//   token         a custom agent's long-lived token (stdin or --from-env
//                 only; no file): it enters the VM as the value of the
//                 variable the spec's token_env names, never refreshed.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::secrets {

/// The secret holding `agent`'s login: "login.AGENT".
std::string loginSecretName(std::string_view agent);

/// The largest credential file `--from-host` reads (they are a few hundred bytes).
inline constexpr size_t kMaxCredentialFileBytes = 64 * 1024;

/// The longest token kept (OpenAI's access tokens are JWTs of a few KiB).
inline constexpr size_t kMaxTokenBytes = 16 * 1024;

/// Every placeholder token the guest sees starts with the agent's own prefix
/// (which it checks) and then this, so a leak is recognizable.
inline constexpr std::string_view kPlaceholderMark = "airlock-placeholder";

/// One agent's login.
struct AgentLogin {
  enum class Kind {
    kSubscription,  ///< an OAuth login with a refresh token (the agent's credential file)
    kToken,         ///< a long-lived token (CLAUDE_CODE_OAUTH_TOKEN), never refreshed
  };
  Kind kind = Kind::kToken;
  std::string format;        ///< the spec's login format ("claude-oauth", "gemini-oauth")
  std::string accessToken;   ///< what goes on the wire
  std::string refreshToken;  ///< "" for kToken
  std::optional<int64_t> expiresAtMs;  ///< the access token's expiry (Unix ms); none: unknown
  std::vector<std::string> scopes;     ///< OAuth scopes (sent again at refresh)
  std::string subscriptionType;        ///< "pro", "max", ... (not secret; shown to the agent)
  std::string rateLimitTier;           ///< not secret; shown to the agent
  /// Who is logged in, as the agent caches it (a JSON object of scalars;
  /// Claude's oauthAccount): ids, e-mail, names. "" when unknown.
  std::string accountJson;
};

/// The login as the secret's value (JSON).
std::string serializeLogin(const AgentLogin& login);
/// The login from a secret's value. Errors: not airlock's login JSON.
Result<AgentLogin> parseLogin(std::string_view value);

/// The login in an agent's credential file `content` of `format`; only the
/// credential fields are kept. Errors (exit code 64): an unknown format,
/// content over kMaxCredentialFileBytes, not the format's JSON, no access
/// token, a token with a character outside printable ASCII.
Result<AgentLogin> loginFromCredentialFile(std::string_view format, std::string_view content);

/// True for a format airlock reads ("claude-oauth", "gemini-oauth",
/// "codex-oauth", "opencode-oauth", "token").
bool knownLoginFormat(std::string_view format);

/// The "exp" claim of JWT `token` in Unix ms, read without checking the
/// signature (it only schedules a refresh); nullopt when `token` is not a
/// JWT with a numeric exp within the years 1970-9999.
std::optional<int64_t> jwtExpiryMs(std::string_view token);

/// True when a refresh of a `format` login replaces its refresh token
/// (Claude's do; Google's keep theirs), so that a login shared with the
/// agent on the host breaks on one side when the other refreshes.
bool rotatesRefreshToken(std::string_view format);

/// True when a `format` login cannot be brokered and its real tokens enter
/// the VM ("opencode-oauth", "token").
bool entersVm(std::string_view format);

/// The agent's own credential file with `login`'s real tokens, for a login
/// that enters the VM (entersVm); nullopt for any other format.
std::optional<std::string> credentialFile(const AgentLogin& login);

/// The object under `key` in the agent's account cache file `content`
/// (Claude's ~/.claude.json oauthAccount; the whole file when `key` is "",
/// as Gemini's google_accounts.json) as compact JSON, keeping only
/// string, number and boolean members of at most 256 bytes; "" when the
/// file or key is missing or not JSON (the agent then asks its API).
std::string accountFromFile(std::string_view content, const std::string& key);

/// `seed` (a JSON object, the spec's seed of the account file; "" for
/// none) with `login`'s account under `key` (merged into the top level
/// when `key` is "").
std::string withAccount(std::string_view seed, const std::string& key, const AgentLogin& login);

/// A long-lived token given by value (`--from-env NAME`, stdin): trimmed of
/// one trailing newline. Errors (64): empty, over kMaxTokenBytes, whitespace
/// or control characters inside, a format that has no such token (codex-oauth).
Result<AgentLogin> loginFromToken(std::string_view format, std::string_view token);

/// What kind of login it is, for messages: "subscription (max)" (an
/// OAuth login with a plan), "account" (one without: a Google login),
/// "long-lived token".
std::string describeLogin(const AgentLogin& login);

/// Whose login it is, for messages: the account's e-mail address, else its
/// id, from accountJson (Claude's emailAddress, Codex's email, Gemini's active, OpenCode's
/// accountId); "" when it names none. As the file's writer gave it: print
/// it through visibleText().
std::string loginAccountName(const AgentLogin& login);

/// The access token the guest gets instead of the real one: the real
/// token's prefix up to its third '-' ("sk-ant-oat01-"), then
/// kPlaceholderMark. The prefix is kept only when it is a kind prefix (at
/// most 16 lowercase letters, digits and '-', and 8 more characters of
/// token after it); else the placeholder is kPlaceholderMark alone.
std::string placeholderToken(const AgentLogin& login);

/// The credential file written in the guest for a kSubscription login:
/// the format's JSON with placeholder tokens and an expiry far in the
/// future (2100-01-01), so the agent never tries to refresh on its own.
/// nullopt for a format whose guest gets its placeholder in the token
/// variable instead (gemini-oauth).
std::optional<std::string> placeholderCredentialFile(const AgentLogin& login);

}  // namespace airlock::secrets
