#pragma once
// The credential broker (issue 15, item 3): the guest's agent talks plain
// HTTP to it at the session's gateway (its base URL points there; see the
// agent spec's login section) with a placeholder token; the broker puts the
// real token of the host's login in its place and forwards the request to
// the real API over TLS (system trust store), streaming the answer back as
// it arrives (SSE is never buffered). The real token never enters the VM.
//
// Per guest connection: one request (http_request.h), then the answer with
// "Connection: close". The request's own credential headers
// (Authorization, X-Api-Key, X-Goog-Api-Key, Cookie, Proxy-Authorization) are dropped; the
// route's header carries the real token. Hop-by-hop headers are dropped.
// Only the route's path prefixes are forwarded, as plain paths (no dot or
// empty segment, no '%', sent as checked; 403 otherwise), and only the
// methods of the API (GET, HEAD, POST, PUT, PATCH, DELETE; 405 otherwise:
// TRACE would echo the real token). A 401 from
// the API is never passed on (the agent would try its own refresh): the
// token is refreshed on the host (once per request) and the request sent
// once more; a second 401 is answered as 403 with a message naming
// `airlock login`.

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "secrets/http_request.h"
#include "secrets/login_tokens.h"

namespace airlock::secrets {

/// Where the broker forwards to and how it authenticates.
struct BrokerRoute {
  std::string upstream;  ///< "https://api.anthropic.com" (scheme and authority, no path)
  std::vector<std::string> pathPrefixes;  ///< request paths forwarded ("/v1/"); others get 403
  std::string agent;  ///< for messages ("claude-code", "git")
  /// How the token goes upstream.
  enum class Auth {
    kBearer,    ///< "Authorization: Bearer TOKEN" (model APIs)
    kGitBasic,  ///< "Authorization: Basic base64(x-access-token:TOKEN)": git's smart HTTP (GitHub, GitLab, Gitea take a token as the password)
  };
  Auth auth = Auth::kBearer;
  /// Git hosts: when not empty, the path's first segment names the upstream
  /// host, one of these ("/github.com/o/r.git/info/refs" goes to
  /// https://github.com/o/r.git/info/refs; another host gets 403), and
  /// `upstream` is not used. `pathPrefixes` apply to the rest of the path,
  /// and only git's smart-HTTP requests are forwarded (GET
  /// REPO/info/refs?service=git-upload-pack or git-receive-pack, POST
  /// REPO/git-upload-pack or REPO/git-receive-pack with no query and git's
  /// Content-Type; no ';' in the path; 403 otherwise): the token never
  /// reaches the host's web pages or API.
  std::vector<std::string> hostsInPath;
  /// With hostsInPath: the broker's own base URL as the guest sees it
  /// ("http://10.0.2.2:4181"). A redirect to https://HOST/... of a listed
  /// host is rewritten to come back through the broker (GitHub redirects a
  /// renamed repository; git follows a redirect without its insteadOf).
  std::string selfUrl;
};

/// The gateway port the guest reaches the broker at (http://10.0.2.2:4180).
inline constexpr uint16_t kBrokerPort = 4180;
/// The gateway port of the git broker (--git-token): http://10.0.2.2:4181/HOST/PATH.
inline constexpr uint16_t kGitBrokerPort = 4181;

struct BrokerOptions {
  std::string caFile;  ///< trust these CAs (PEM) instead of the system store ("" = system)
  HttpRequestLimits limits;
  /// Requests served at once; more are answered 503 at once (each may hold
  /// a body of limits.maxBodyBytes in memory: a guest opening many
  /// connections must not exhaust the host's).
  unsigned maxConcurrent = 32;
};

/// One line per request and per failure (the session's egress log); may be empty.
using BrokerLogFn = std::function<void(const std::string&)>;

class CredentialBroker {
 public:
  /// `tokens` must outlive the broker.
  CredentialBroker(BrokerRoute route, TokenSource& tokens, BrokerOptions options);
  /// Serves one guest connection: reads one request, answers it, closes.
  /// Thread-safe (called on the egress proxy's connection threads).
  void serve(Fd guest, const BrokerLogFn& log) const;

 private:
  BrokerRoute route_;
  TokenSource& tokens_;
  BrokerOptions options_;
  mutable std::atomic<unsigned> serving_{0};
};

}  // namespace airlock::secrets
