// The broker's HTTPS side (secrets/session_tls.h): a client trusting the
// session's CA alone reaches the inner service over TLS for the gateway's
// address; any other client, name or stalled handshake gets nothing.

#include "secrets/session_tls.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace airlock::secrets {
namespace {

/// A TLS client on one end of a socket pair, trusting `caPem` and checking
/// the peer's certificate for IP `ip`.
struct Client {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = nullptr;
  Client(const std::string& caPem, const std::string& ip) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    BIO* bio = BIO_new_mem_buf(caPem.data(), static_cast<int>(caPem.size()));
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (ca) X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
    X509_free(ca);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(ctx), ip.c_str());
  }
  ~Client() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
  bool connect(int fd) {
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    bool ok = SSL_connect(ssl) == 1;
    ERR_clear_error();
    return ok;
  }
};

constexpr size_t kRequestBytes = 100000;  // more than one TLS record

/// The inner service, as the broker: reads the whole request (kRequestBytes),
/// answers "echo:" + what it read, and closes.
void echo(Fd fd) {
  std::string got;
  char buf[4096];
  ssize_t n;
  while (got.size() < kRequestBytes && (n = ::read(fd.get(), buf, sizeof buf)) > 0)
    got.append(buf, static_cast<size_t>(n));
  std::string answer = "echo:" + got;
  for (size_t off = 0; off < answer.size();) {
    ssize_t w = ::write(fd.get(), answer.data() + off, answer.size() - off);
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

TEST(SessionTls, AClientTrustingTheSessionCaReachesTheServiceForTheGatewaysAddress) {
  auto tls = SessionTls::create("10.0.2.2");
  ASSERT_TRUE(tls) << tls.error().message;
  EXPECT_NE((*tls)->caPem().find("BEGIN CERTIFICATE"), std::string::npos);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  std::thread server([&] { (*tls)->serve(Fd(pair[1]), echo, 5000); });
  Client client((*tls)->caPem(), "10.0.2.2");
  ASSERT_TRUE(client.connect(pair[0]));
  std::string request(kRequestBytes, 'x');
  for (size_t i = 0; i < request.size(); ++i) request[i] = static_cast<char>('a' + i % 26);
  ASSERT_EQ(SSL_write(client.ssl, request.data(), static_cast<int>(request.size())), static_cast<int>(request.size()));
  std::string answer;
  char buf[16384];
  int n;
  while ((n = SSL_read(client.ssl, buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(answer.size(), request.size() + 5);
  EXPECT_TRUE(answer == "echo:" + request);  // (not printed: 100 kB)
  // The service closed: the client got a clean TLS close, not a cut connection.
  EXPECT_EQ(SSL_get_error(client.ssl, n), SSL_ERROR_ZERO_RETURN);
  server.join();
  ::close(pair[0]);
}

TEST(SessionTls, AnotherSessionsCaOrAnotherAddressIsRefusedAndTheServiceNeverRuns) {
  auto tls = SessionTls::create("10.0.2.2");
  auto other = SessionTls::create("10.0.2.2");
  ASSERT_TRUE(tls && other);
  EXPECT_NE((*tls)->caPem(), (*other)->caPem());  // a CA per session
  for (auto [ca, ip] : {std::pair{(*other)->caPem(), std::string("10.0.2.2")},
                        std::pair{(*tls)->caPem(), std::string("10.0.2.3")}}) {
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    std::atomic<bool> ran{false};
    std::thread server([&] { (*tls)->serve(Fd(pair[1]), [&](Fd) { ran = true; }, 5000); });
    Client client(ca, ip);
    EXPECT_FALSE(client.connect(pair[0]));
    ::close(pair[0]);
    server.join();
    EXPECT_FALSE(ran);
  }
}

TEST(SessionTls, AStalledHandshakeEndsAfterTheTimeout) {
  auto tls = SessionTls::create("10.0.2.2");
  ASSERT_TRUE(tls);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  std::atomic<bool> ran{false};
  auto start = std::chrono::steady_clock::now();
  (*tls)->serve(Fd(pair[1]), [&](Fd) { ran = true; }, 300);  // the "guest" never says hello
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(ran);
  ::close(pair[0]);
}

}  // namespace
}  // namespace airlock::secrets
