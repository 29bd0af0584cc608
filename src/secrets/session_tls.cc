#include "secrets/session_tls.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "common/c_ptr.h"

namespace airlock::secrets {
namespace {

using Key = CPtr<EVP_PKEY, EVP_PKEY_free>;
using Cert = CPtr<X509, X509_free>;
using Ssl = CPtr<SSL, SSL_free>;

Result<> sslError(const char* what) {
  unsigned long code = ERR_get_error();
  char text[256] = "unknown error";
  if (code) ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return fail("cannot make the session's TLS certificate: {}: {}", what, text);
}

bool addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

/// A certificate for `key` named `commonName`, signed by `issuerKey` as
/// `issuer` (itself when null), with `extensions` (nid, value).
Result<Cert> makeCert(EVP_PKEY* key, const char* commonName, X509* issuer, EVP_PKEY* issuerKey,
                      std::initializer_list<std::pair<int, const char*>> extensions) {
  Cert cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) return std::unexpected(sslError("X509_new").error());
  CPtr<BIGNUM, BN_free> serial(BN_new());
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())))
    return std::unexpected(sslError("serial number").error());
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 30L * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("airlock"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(commonName), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1 || X509_set_pubkey(cert.get(), key) != 1)
    return std::unexpected(sslError("names").error());
  for (auto [nid, value] : extensions)
    if (!addExtension(cert.get(), signer, nid, value)) return std::unexpected(sslError(value).error());
  if (X509_sign(cert.get(), issuerKey, EVP_sha256()) <= 0) return std::unexpected(sslError("signing").error());
  return cert;
}

bool writeAllPlain(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::shared_ptr<SessionTls>> SessionTls::create(const std::string& ip) {
  Key caKey(EVP_EC_gen("P-256"));
  Key serverKey(EVP_EC_gen("P-256"));
  if (!caKey || !serverKey) return std::unexpected(sslError("key generation").error());
  auto ca = makeCert(caKey.get(), "airlock session CA", nullptr, caKey.get(),
                     {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                      {NID_key_usage, "critical,keyCertSign,cRLSign"},
                      {NID_subject_key_identifier, "hash"}});
  if (!ca) return std::unexpected(ca.error());
  const std::string san = "IP:" + ip;
  auto server = makeCert(serverKey.get(), ip.c_str(), ca->get(), caKey.get(),
                         {{NID_basic_constraints, "critical,CA:FALSE"},
                          {NID_key_usage, "critical,digitalSignature"},
                          {NID_ext_key_usage, "serverAuth"},
                          {NID_subject_alt_name, san.c_str()},
                          {NID_authority_key_identifier, "keyid:always"}});
  if (!server) return std::unexpected(server.error());

  std::shared_ptr<SessionTls> tls(new SessionTls());
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  tls->ctx_ = ctx;
  if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_use_certificate(ctx, server->get()) != 1 || SSL_CTX_use_PrivateKey(ctx, serverKey.get()) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1)
    return std::unexpected(sslError("TLS context").error());
  CPtr<BIO, BIO_free_all> pem(BIO_new(BIO_s_mem()));
  if (!pem || PEM_write_bio_X509(pem.get(), ca->get()) != 1) return std::unexpected(sslError("PEM").error());
  char* data = nullptr;
  long size = BIO_get_mem_data(pem.get(), &data);
  tls->caPem_.assign(data, static_cast<size_t>(size));
  return tls;
}

SessionTls::~SessionTls() { SSL_CTX_free(static_cast<SSL_CTX*>(ctx_)); }

void SessionTls::serve(Fd guest, const std::function<void(Fd)>& inner, int timeoutMs) const {
  timeval tv{timeoutMs / 1000, (timeoutMs % 1000) * 1000};
  setsockopt(guest.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(guest.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  Ssl ssl(SSL_new(static_cast<SSL_CTX*>(ctx_)));
  if (!ssl || SSL_set_fd(ssl.get(), guest.get()) != 1 || SSL_accept(ssl.get()) != 1) {
    ERR_clear_error();
    return;
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return;
  Fd plain(pair[0]);
  std::thread service([&inner, fd = pair[1]] { inner(Fd(fd)); });
  char buf[16384];
  bool guestOpen = true;
  for (;;) {
    pollfd fds[2] = {{plain.get(), POLLIN, 0}, {guest.get(), POLLIN, 0}};
    const bool buffered = guestOpen && SSL_pending(ssl.get()) > 0;
    if (!buffered && ::poll(fds, guestOpen ? 2 : 1, timeoutMs) <= 0) break;  // stalled
    if (buffered || (guestOpen && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))) {
      int n = SSL_read(ssl.get(), buf, sizeof buf);
      if (n > 0) {
        if (!writeAllPlain(plain.get(), buf, static_cast<size_t>(n))) break;
      } else {
        guestOpen = false;  // the guest is done sending (or gone): the service sees the end
        ::shutdown(plain.get(), SHUT_WR);
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(plain.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // the service answered and closed
        SSL_shutdown(ssl.get());
        break;
      }
      if (SSL_write(ssl.get(), buf, static_cast<int>(n)) != n) break;
    }
  }
  ERR_clear_error();
  plain.reset();  // a service still running sees the connection gone
  service.join();
}

}  // namespace airlock::secrets
