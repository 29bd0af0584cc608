#pragma once
// The real access token of one agent login, on the host, for the credential
// broker: read from the secret store, refreshed before it expires and when
// the API refuses it, and the rotated tokens stored at once. Concurrent
// sessions (several airlock processes) share one refresh: it happens under
// a lock file, and a session that waited for the lock takes the token the
// other stored instead of refreshing again (a refresh token may be good for
// one use only).

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/host_context.h"
#include "secrets/agent_login.h"
#include "secrets/secret_store.h"

namespace airlock::secrets {

/// Where the broker gets the token it puts on the wire (a fake in tests).
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  /// A token good for the next request (refreshed first when it expires
  /// within kRefreshMarginMs). Errors: the login is gone or its refresh failed.
  virtual Result<std::string> token() = 0;
  /// The API refused `rejected` (401): a new token, unless another request
  /// or session already replaced it. Errors: nothing to refresh with, the
  /// refresh failed, or this session refreshed less than
  /// kMinRejectedRefreshGapMs ago.
  virtual Result<std::string> replaceRejected(const std::string& rejected) = 0;
};

/// How a login is refreshed (the agent spec's login section).
struct RefreshEndpoint {
  std::string url;           ///< "https://platform.claude.com/v1/oauth/token"
  std::string clientId;      ///< the agent's public OAuth client id
  std::string clientSecret;  ///< its public client secret, when the endpoint wants one ("": none)
};

/// One refresh request's body.
struct RefreshRequest {
  std::string contentType;  ///< "application/json" or "application/x-www-form-urlencoded"
  std::string body;
};

/// The refresh request for `login` as its agent sends it: claude-oauth as
/// JSON {grant_type, refresh_token, client_id, scope} (what Claude Code
/// sends); codex-oauth the same without scope (what Codex sends);
/// gemini-oauth form-encoded with the client secret (RFC 6749 section 6,
/// what google-auth-library sends).
RefreshRequest refreshRequest(const AgentLogin& login, const RefreshEndpoint& endpoint);

/// POSTs `request` to `url` and returns the response's status and body
/// (at most 1 MiB). Errors: no connection, TLS failure, timeout (30 s).
using HttpPoster =
    std::function<Result<std::pair<long, std::string>>(const std::string& url, const RefreshRequest& request)>;

/// Refresh margin: a token expiring sooner than this is refreshed first
/// (the agents' own margin is about 5 minutes).
inline constexpr int64_t kRefreshMarginMs = 5 * 60 * 1000;

/// After a refresh, a rejection sooner than this is not refreshed again:
/// an API that refuses fresh tokens (or a guest provoking 401s) must not
/// make the host spend refresh after refresh.
inline constexpr int64_t kMinRejectedRefreshGapMs = 60 * 1000;

/// The token of `agent`'s login (the secret loginSecretName(agent)).
class LoginTokens final : public TokenSource {
 public:
  /// `lockPath`: the lock file shared by every session of this login.
  LoginTokens(SecretStore& store, std::string agent, RefreshEndpoint endpoint, HttpPoster post, std::string lockPath,
              const Clock& clock);
  /// Reads the stored login. Errors: none stored, or not airlock's.
  Result<> load();
  const AgentLogin& login() const { return login_; }

  Result<std::string> token() override;
  Result<std::string> replaceRejected(const std::string& rejected) override;

 private:
  bool expiring() const;
  /// Under the lock file: adopts a newer stored token, else refreshes.
  Result<> refresh();
  int64_t nowMs() const;

  std::mutex mutex_;
  SecretStore& store_;
  std::string agent_;
  RefreshEndpoint endpoint_;
  HttpPoster post_;
  std::string lockPath_;
  const Clock& clock_;
  AgentLogin login_;
  std::optional<int64_t> refreshedAtMs_;  ///< when this session last refreshed (Unix ms)
};

/// An HttpPoster over libcurl trusting `caFile` (PEM) instead of the system
/// store when not empty.
HttpPoster curlPoster(std::string caFile);

}  // namespace airlock::secrets
