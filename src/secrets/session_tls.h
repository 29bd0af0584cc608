#pragma once
// TLS for the credential broker's HTTPS port (issue 15): some agents only
// talk HTTPS to part of their API (Codex's chatgpt_base_url calls). Each
// session makes its own CA and a server certificate for the gateway's
// address, kept in memory only and never written on the host; the guest
// trusts that CA alone (its PEM goes into the guest, named by the agent's CA
// variable), so the certificate is good for nothing outside the session.
//
// serve() terminates one guest connection: the TLS handshake, then the
// plain bytes pass to and from a service (the broker) that runs on its own
// end of a socket pair, as if the guest had talked plain HTTP to it.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::secrets {

/// The gateway port of the broker's HTTPS side (https://10.0.2.2:4182).
inline constexpr uint16_t kBrokerTlsPort = 4182;

class SessionTls {
 public:
  /// A new P-256 CA ("airlock session CA", valid 30 days from an hour ago)
  /// and a server certificate it signed for the IPv4 address `ip`
  /// (subjectAltName IP, serverAuth). Errors: OpenSSL failed.
  static Result<std::shared_ptr<SessionTls>> create(const std::string& ip);
  ~SessionTls();
  SessionTls(const SessionTls&) = delete;
  SessionTls& operator=(const SessionTls&) = delete;

  /// The CA certificate (PEM) the guest trusts.
  const std::string& caPem() const { return caPem_; }
  /// Serves one guest connection over TLS (TLS 1.2 or later): `inner` runs
  /// on another thread with the plain side, and serve() returns once both
  /// sides are done. A handshake that fails or stalls for `timeoutMs`
  /// closes the connection without calling `inner`; a guest that stops
  /// reading or sending for `timeoutMs` ends it. Thread-safe.
  void serve(Fd guest, const std::function<void(Fd)>& inner, int timeoutMs = 120000) const;

 private:
  SessionTls() = default;
  void* ctx_ = nullptr;  ///< SSL_CTX*
  std::string caPem_;
};

}  // namespace airlock::secrets
