// The credential broker against a real upstream: a plain-HTTP server on
// 127.0.0.1 run by the test on a thread, and a socketpair as the guest's
// connection. The guest is hostile; the upstream records every request it
// got, so "never reached the API" is checked, not assumed.

#include "secrets/credential_broker.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.h"

namespace airlock::secrets {
namespace {

using namespace std::chrono_literals;

// The broker writes to guests that may be gone; airlock ignores SIGPIPE in main().
const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

constexpr const char* kReal1 = "sk-ant-oat01-REAL-TOKEN-1";
constexpr const char* kReal2 = "sk-ant-oat01-REAL-TOKEN-2";
constexpr const char* kPlaceholder = "sk-ant-oat01-airlock-placeholder";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = s.find_first_not_of(" \t");
  return i == std::string::npos ? std::string() : s.substr(i);
}

/// Reads more from `fd` into `out`; false at EOF, error or after `timeout`.
bool readSome(int fd, std::string& out, std::chrono::milliseconds timeout = 10s) {
  pollfd pfd{fd, POLLIN, 0};
  if (::poll(&pfd, 1, static_cast<int>(timeout.count())) != 1) return false;
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return false;
  out.append(buf, static_cast<size_t>(n));
  return true;
}

/// An HTTP message as one side received it (header names lowercased, as sent otherwise).
struct Message {
  std::string firstLine;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  std::vector<std::string> all(const std::string& name) const {
    std::vector<std::string> values;
    for (const auto& [k, v] : headers)
      if (trim(k) == name) values.push_back(v);
    return values;
  }
  std::string one(const std::string& name) const {
    auto values = all(name);
    return values.size() == 1 ? values[0] : "<" + std::to_string(values.size()) + " values>";
  }
  std::string method() const { return firstLine.substr(0, firstLine.find(' ')); }
  std::string target() const {
    size_t a = firstLine.find(' ');
    size_t b = firstLine.find(' ', a + 1);
    return firstLine.substr(a + 1, b - a - 1);
  }
  int status() const { return std::atoi(target().c_str()); }
};

/// Splits "head\r\n\r\nbody" into a Message; false without a complete head.
bool parseHead(const std::string& data, Message& m, size_t& bodyStart) {
  size_t end = data.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  size_t lineEnd = data.find("\r\n");
  m.firstLine = data.substr(0, lineEnd);
  size_t pos = lineEnd + 2;
  while (pos < end) {
    size_t next = data.find("\r\n", pos);
    std::string line = data.substr(pos, next - pos);
    size_t colon = line.find(':');
    m.headers.emplace_back(lower(line.substr(0, colon)), colon == std::string::npos ? "" : trim(line.substr(colon + 1)));
    pos = next + 2;
  }
  bodyStart = end + 4;
  return true;
}

/// The API: a plain-HTTP server on 127.0.0.1, one connection at a time,
/// recording each request and answering with the test's handler.
class Upstream {
 public:
  /// Writes the answer to `fd` (closed afterwards); `index` counts requests from 0.
  using Handler = std::function<void(int fd, const Message& request, size_t index)>;

  explicit Upstream(Handler handler) : handler_(std::move(handler)) {
    listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_.get(), 16) != 0 ||
        ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      ADD_FAILURE() << "cannot listen on 127.0.0.1: " << std::strerror(errno);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Upstream() {
    stop_ = true;
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Message> received() {
    std::lock_guard guard(mutex_);
    return received_;
  }

 private:
  void run() {
    while (!stop_) {
      pollfd pfd{listen_.get(), POLLIN, 0};
      if (::poll(&pfd, 1, 50) != 1) continue;
      Fd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) continue;
      std::string data;
      Message m;
      size_t bodyStart = 0;
      while (!parseHead(data, m, bodyStart))
        if (!readSome(conn.get(), data, 5s)) break;
      if (bodyStart == 0) continue;
      size_t length = 0;
      if (auto cl = m.all("content-length"); cl.size() == 1) length = std::stoul(cl[0]);
      m.body = data.substr(bodyStart);
      while (m.body.size() < length)
        if (!readSome(conn.get(), m.body, 5s)) break;
      size_t index;
      {
        std::lock_guard guard(mutex_);
        received_.push_back(m);
        index = received_.size() - 1;
      }
      handler_(conn.get(), m, index);
    }
  }

  Handler handler_;
  Fd listen_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_ = false;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Message> received_;
};

/// Answers `status` with a JSON body and Content-Length.
void answer(int fd, int status, const std::string& body, const std::string& extraHeaders = "") {
  writeAll(fd, "HTTP/1.1 " + std::to_string(status) + " Whatever\r\nContent-Type: application/json\r\n" + extraHeaders +
                   "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

/// The host's login, as the broker sees it.
class FakeTokens final : public TokenSource {
 public:
  Result<std::string> token() override {
    std::lock_guard guard(mutex_);
    if (!loginGone.empty()) return fail("{}", loginGone);
    return current;
  }
  Result<std::string> replaceRejected(const std::string& rejected) override {
    std::lock_guard guard(mutex_);
    rejections.push_back(rejected);
    if (!refreshFails.empty()) return fail("{}", refreshFails);
    current = current == kReal1 ? kReal2 : std::string("sk-ant-oat01-REAL-TOKEN-") + std::to_string(rejections.size() + 1);
    return current;
  }
  std::vector<std::string> rejected() {
    std::lock_guard guard(mutex_);
    return rejections;
  }
  std::string current = kReal1;
  std::string refreshFails;
  std::string loginGone;

 private:
  std::mutex mutex_;
  std::vector<std::string> rejections;
};

/// One guest connection being served on its own thread.
class GuestConnection {
 public:
  GuestConnection(const CredentialBroker& broker, std::vector<std::string>& log, std::mutex& logMutex) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) ADD_FAILURE() << "socketpair";
    guest_.reset(fds[0]);
    Fd brokerSide(fds[1]);
    thread_ = std::thread([&broker, &log, &logMutex, fd = std::move(brokerSide)]() mutable {
      broker.serve(std::move(fd), [&](const std::string& line) {
        std::lock_guard guard(logMutex);
        log.push_back(line);
      });
    });
  }
  ~GuestConnection() {
    guest_.reset();
    if (thread_.joinable()) thread_.join();
  }
  int fd() const { return guest_.get(); }
  void send(std::string_view text) { writeAll(guest_.get(), text); }
  /// Reads until `needle` has arrived; false if it did not within `timeout`.
  bool readUntil(const std::string& needle, std::chrono::milliseconds timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.find(needle) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !readSome(guest_.get(), received_, left)) return false;
    }
    return true;
  }
  /// Reads to the end of the answer (the broker closes the connection) and waits for serve() to return.
  Message finish() {
    while (readSome(guest_.get(), received_, 20s)) {
    }
    thread_.join();
    Message m;
    size_t bodyStart = 0;
    if (!parseHead(received_, m, bodyStart)) {
      ADD_FAILURE() << "no answer head in: " << received_;
      return m;
    }
    m.body = received_.substr(bodyStart);
    return m;
  }
  const std::string& raw() const { return received_; }
  void closeGuest() { guest_.reset(); }

 private:
  Fd guest_;
  std::thread thread_;
  std::string received_;
};

class CredentialBrokerTest : public ::testing::Test {
 protected:
  /// A broker forwarding /v1/ to `upstream`.
  CredentialBroker broker(const Upstream& upstream, HttpRequestLimits limits = {}) {
    return broker(upstream.url(), limits);
  }
  CredentialBroker broker(const std::string& url, HttpRequestLimits limits = {}) {
    BrokerOptions options;
    options.limits = limits;
    return CredentialBroker(BrokerRoute{url, {"/v1/"}, "claude-code"}, tokens_, options);
  }
  Message exchange(const CredentialBroker& b, const std::string& request) {
    GuestConnection c(b, log_, logMutex_);
    c.send(request);
    return c.finish();
  }
  std::vector<std::string> log() {
    std::lock_guard guard(logMutex_);
    return log_;
  }
  /// No log line holds a real token.
  void expectNoTokenInLog() {
    for (const auto& line : log()) EXPECT_EQ(line.find("REAL"), std::string::npos) << line;
  }

  FakeTokens tokens_;
  std::vector<std::string> log_;
  std::mutex logMutex_;
};

std::string post(const std::string& target, const std::string& body, const std::string& headers = "") {
  return "POST " + target + " HTTP/1.1\r\nHost: 10.0.2.2:4180\r\nContent-Type: application/json\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST_F(CredentialBrokerTest, TheRealTokenReplacesEveryCredentialTheGuestSent) {
  Upstream upstream([](int fd, const Message&, size_t) {
    answer(fd, 200, R"({"id":"msg_1"})", "Set-Cookie: __cf_bm=abc; path=/\r\nrequest-id: req_1\r\n");
  });
  auto b = broker(upstream);
  Message got = exchange(b, post("/v1/messages?beta=true", R"({"model":"m"})",
                                 std::string("Authorization: Bearer ") + kPlaceholder +
                                     "\r\nauthorization: Bearer second\r\nX-Api-Key: sk-ant-api03-guest\r\n"
                                     "x-api-key: again\r\nCookie: a=b\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n"
                                     "X-Goog-Api-Key: AIza-guest\r\n"
                                     "anthropic-version: 2023-06-01\r\nanthropic-beta: oauth-2025-04-20\r\n"
                                     "Connection: keep-alive, X-Drop\r\nX-Fold: a\r\n Authorization: Bearer folded\r\n"));
  EXPECT_EQ(got.status(), 200);
  EXPECT_EQ(got.body, R"({"id":"msg_1"})");
  EXPECT_EQ(got.one("request-id"), "req_1");
  EXPECT_TRUE(got.all("set-cookie").empty());
  EXPECT_EQ(got.one("connection"), "close");

  auto requests = upstream.received();
  ASSERT_EQ(requests.size(), 1u);
  const Message& r = requests[0];
  EXPECT_EQ(r.method(), "POST");
  EXPECT_EQ(r.target(), "/v1/messages?beta=true");
  EXPECT_EQ(r.all("authorization"), std::vector<std::string>{std::string("Bearer ") + kReal1});
  EXPECT_TRUE(r.all("x-api-key").empty());
  EXPECT_TRUE(r.all("x-goog-api-key").empty());
  EXPECT_TRUE(r.all("cookie").empty());
  EXPECT_TRUE(r.all("proxy-authorization").empty());
  EXPECT_EQ(r.one("anthropic-version"), "2023-06-01");
  EXPECT_EQ(r.one("anthropic-beta"), "oauth-2025-04-20");
  EXPECT_EQ(r.one("host"), "127.0.0.1:" + upstream.url().substr(upstream.url().rfind(':') + 1));
  EXPECT_EQ(r.body, R"({"model":"m"})");
  for (const auto& [name, value] : r.headers) EXPECT_EQ(value.find(kPlaceholder), std::string::npos) << name;
  // Nothing real goes back to the guest or into the log.
  EXPECT_EQ(got.body.find("REAL"), std::string::npos);
  expectNoTokenInLog();
  ASSERT_FALSE(log().empty());
  EXPECT_NE(log().back().find("POST /v1/messages -> 200"), std::string::npos) << log().back();
}

TEST_F(CredentialBrokerTest, OtherMethodsAndTheirBodiesAreForwarded) {
  Upstream upstream([](int fd, const Message& r, size_t) {
    if (r.method() == "HEAD")
      writeAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n");
    else
      answer(fd, 200, "{\"method\":\"" + r.method() + "\"}");
  });
  auto b = broker(upstream);
  Message got = exchange(b, "GET /v1/models?limit=5&after=a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(got.status(), 200);
  EXPECT_EQ(got.body, R"({"method":"GET"})");
  got = exchange(b, "DELETE /v1/files/f_1 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(got.body, R"({"method":"DELETE"})");
  got = exchange(b, "PATCH /v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(got.body, R"({"method":"PATCH"})");
  got = exchange(b, "HEAD /v1/x HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(got.status(), 200);
  EXPECT_EQ(got.body, "");
  auto requests = upstream.received();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].target(), "/v1/models?limit=5&after=a%2Fb");
  EXPECT_EQ(requests[1].method(), "DELETE");
  EXPECT_EQ(requests[2].method(), "PATCH");
  EXPECT_EQ(requests[2].body, "abc");
  EXPECT_EQ(requests[3].method(), "HEAD");
  for (const auto& r : requests) EXPECT_EQ(r.one("authorization"), std::string("Bearer ") + kReal1);
}

TEST_F(CredentialBrokerTest, APathOutsideThePrefixesIs403AndNeverReachesTheApi) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  auto b = broker(upstream);
  for (const char* target : {"/", "/v2/messages", "/v1", "/admin/v1/x", "/api/oauth/profile", "/V1/messages"}) {
    Message got = exchange(b, "GET " + std::string(target) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(got.status(), 403) << target;
    EXPECT_NE(got.body.find("not forwarded"), std::string::npos) << got.body;
  }
  EXPECT_TRUE(upstream.received().empty());
}

TEST_F(CredentialBrokerTest, DotSegmentsEncodingsAndEmptySegmentsAreRefused) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  auto b = broker(upstream);
  for (const char* target :
       {"/v1/messages/../x", "/v1/../admin", "/v1/./messages", "/v1/%2e%2e/admin", "/v1/%2E%2E/admin",
        "/v1/messages%2F..%2F..%2Fx", "/v1//messages", "/v1/messages//", "/v1/..", "/v1/.", "/v1/..?x=1",
        "/v1/..#x", "/v1/messages/..", "/v1/x#/../../admin", "/v1/..\\admin", "/v1/\\..\\admin"}) {
    Message got = exchange(b, "GET " + std::string(target) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(got.status() == 403 || got.status() == 400) << target << " -> " << got.status();
  }
  for (const auto& r : upstream.received()) ADD_FAILURE() << "reached the API: " << r.firstLine;
}

// --git-token's route: the first segment names the host, one of the
// session's git hosts; any other host, a bare host and dot segments after
// it are refused before anything is sent; a listed host is reached over
// HTTPS only (this plain-HTTP upstream fails the handshake: 502 naming it).
TEST_F(CredentialBrokerTest, AGitRouteForwardsOnlyToItsHostsOverHttps) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  const std::string listed = upstream.url().substr(std::string("http://").size());  // 127.0.0.1:PORT
  BrokerRoute route;
  route.pathPrefixes = {"/"};
  route.agent = "git";
  route.auth = BrokerRoute::Auth::kGitBasic;
  route.hostsInPath = {"github.com", listed};
  CredentialBroker b(route, tokens_, BrokerOptions{});
  for (const std::string& target : std::vector<std::string>{"/evil.example/o/r.git/info/refs", "/github.com", "/127.0.0.1/o/r.git",
                                   "/" + listed + "/o/../../x", "/" + listed + "//r.git", "/github.com.evil/o/r",
                                   "/" + listed + "/settings/tokens", "/" + listed + "/api/v4/user",
                                   "/" + listed + "/o/r.git/info/refs", "/" + listed + "/o/r.git/info/refs?x=1",
                                   "/" + listed + "/git-upload-pack", "/" + listed + "/o/r.git/git-receive-pack/x"}) {
    Message got = exchange(b, "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(got.status() == 403 || got.status() == 400) << target << " -> " << got.status();
  }
  Message got = exchange(b, "GET /evil.example/o/r.git/info/refs HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(got.body.find("evil.example is not a git host of this session (--git-host)"), std::string::npos)
      << got.body;
  EXPECT_TRUE(upstream.received().empty()) << "a refused request reached a server";
  // Only git's own requests: GET info/refs, POST *-pack with git's content type and no query.
  const std::string repo = "/" + listed + "/o/r.git";
  const std::string gitType = "Content-Type: application/x-git-upload-pack-request\r\n";
  for (const std::string& request : std::vector<std::string>{
           "POST " + repo + "/info/refs?service=git-upload-pack HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
           "PUT /" + listed + "/api/v3/repos/o/r/collaborators/git-upload-pack HTTP/1.1\r\n" + gitType +
               "Content-Length: 2\r\n\r\n{}",
           "PATCH " + repo + "/git-upload-pack HTTP/1.1\r\n" + gitType + "Content-Length: 2\r\n\r\n{}",
           "DELETE " + repo + "/git-receive-pack HTTP/1.1\r\n\r\n",
           "POST " + repo + "/git-upload-pack HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
           "POST " + repo + "/git-upload-pack?x=1 HTTP/1.1\r\n" + gitType + "Content-Length: 0\r\n\r\n",
           "POST /" + listed + "/o/r.git;x/git-upload-pack HTTP/1.1\r\n" + gitType + "Content-Length: 0\r\n\r\n",
           "POST " + repo + "/git-receive-pack HTTP/1.1\r\n" + gitType + "Content-Length: 0\r\n\r\n"}) {
    EXPECT_EQ(exchange(b, request).status(), 403) << request;
  }
  EXPECT_TRUE(upstream.received().empty()) << "a request that is not git's reached the server";
  Message https = exchange(b, "GET /" + listed + "/o/r.git/info/refs?service=git-receive-pack HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(https.status(), 502);
  EXPECT_NE(https.body.find("https://" + listed + " unreachable"), std::string::npos) << https.body;
  expectNoTokenInLog();
}

// Every request may hold a body in memory: past maxConcurrent at once the
// next is answered 503 before anything is read, and the first still works.
TEST_F(CredentialBrokerTest, RequestsPastTheConcurrencyLimitAre503) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, R"({"ok":1})"); });
  BrokerOptions options;
  options.maxConcurrent = 1;
  CredentialBroker b(BrokerRoute{upstream.url(), {"/v1/"}, "claude-code"}, tokens_, options);
  GuestConnection slow(b, log_, logMutex_);
  slow.send("POST /v1/messages HTTP/1.1\r\nContent-Length: 10\r\n\r\n12345");  // half its body
  std::this_thread::sleep_for(200ms);
  Message refused = exchange(b, post("/v1/messages", "{}"));
  EXPECT_EQ(refused.status(), 503);
  EXPECT_NE(refused.body.find("1 requests at once already"), std::string::npos) << refused.body;
  slow.send("67890");
  EXPECT_EQ(slow.finish().status(), 200);
  EXPECT_EQ(exchange(b, post("/v1/messages", "{}")).status(), 200) << "the slot is free again";
}

TEST_F(CredentialBrokerTest, A401IsRefreshedOnTheHostAndRetriedOnceWithTheNewToken) {
  Upstream upstream([](int fd, const Message& r, size_t) {
    if (r.one("authorization") == std::string("Bearer ") + kReal1)
      answer(fd, 401, R"({"type":"error","error":{"type":"authentication_error","message":"expired"}})");
    else
      answer(fd, 200, R"({"id":"msg_2"})");
  });
  auto b = broker(upstream);
  Message got = exchange(b, post("/v1/messages", R"({"stream":false})"));
  EXPECT_EQ(got.status(), 200);
  EXPECT_EQ(got.body, R"({"id":"msg_2"})");
  EXPECT_EQ(got.firstLine.find("401"), std::string::npos);
  EXPECT_EQ(tokens_.rejected(), std::vector<std::string>{kReal1});
  auto requests = upstream.received();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].one("authorization"), std::string("Bearer ") + kReal1);
  EXPECT_EQ(requests[1].one("authorization"), std::string("Bearer ") + kReal2);
  EXPECT_EQ(requests[1].target(), "/v1/messages");
  EXPECT_EQ(requests[1].body, R"({"stream":false})");
  expectNoTokenInLog();
}

TEST_F(CredentialBrokerTest, TwoRejectionsAre403NamingAirlockLoginAndTheGuestNeverSees401) {
  Upstream upstream([](int fd, const Message&, size_t) {
    answer(fd, 401, R"({"type":"error","error":{"type":"authentication_error","message":"OAuth token revoked"}})");
  });
  auto b = broker(upstream);
  Message got = exchange(b, post("/v1/messages", "{}"));
  EXPECT_EQ(got.status(), 403);
  EXPECT_NE(got.body.find("airlock login claude-code"), std::string::npos) << got.body;
  EXPECT_EQ(got.body.find("authentication_error"), std::string::npos) << got.body;
  EXPECT_EQ(upstream.received().size(), 2u);
  // One refresh for the request, not one per refused attempt (each may spend a refresh token).
  EXPECT_EQ(tokens_.rejected(), std::vector<std::string>{kReal1});
  expectNoTokenInLog();
}

TEST_F(CredentialBrokerTest, AFailedRefreshAfterA401Is403WithItsReason) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 401, "{}"); });
  tokens_.refreshFails = "refreshing the claude-code login failed (HTTP 400); run `airlock login claude-code`";
  auto b = broker(upstream);
  Message got = exchange(b, post("/v1/messages", "{}"));
  EXPECT_EQ(got.status(), 403);
  EXPECT_NE(got.body.find("airlock login claude-code"), std::string::npos) << got.body;
  EXPECT_EQ(upstream.received().size(), 1u);
}

TEST_F(CredentialBrokerTest, NoLoginIs403AndNothingIsSent) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  tokens_.loginGone = "no login stored for claude-code; run `airlock login claude-code`";
  auto b = broker(upstream);
  Message got = exchange(b, post("/v1/messages", "{}"));
  EXPECT_EQ(got.status(), 403);
  EXPECT_NE(got.body.find("airlock login claude-code"), std::string::npos) << got.body;
  EXPECT_TRUE(upstream.received().empty());
}

TEST_F(CredentialBrokerTest, AChunkedRequestBodyArrivesIntactWithItsLength) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  auto b = broker(upstream);
  std::string body;
  for (int i = 0; i < 3000; ++i) body += "{\"i\":" + std::to_string(i) + "}\n";
  body += std::string("\0\r\n0\r\n\r\n", 8);  // framing-like bytes inside the data
  GuestConnection c(b, log_, logMutex_);
  c.send("POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (size_t at = 0; at < body.size(); at += 7000) {
    std::string piece = body.substr(at, 7000);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
    c.send(size);
    std::this_thread::sleep_for(2ms);
    c.send(piece + "\r\n");
  }
  c.send("0\r\n\r\n");
  Message got = c.finish();
  EXPECT_EQ(got.status(), 200);
  auto requests = upstream.received();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].body, body);
  EXPECT_EQ(requests[0].one("content-length"), std::to_string(body.size()));
  EXPECT_TRUE(requests[0].all("transfer-encoding").empty());
}

TEST_F(CredentialBrokerTest, AStreamedAnswerReachesTheGuestBeforeTheApiFinishes) {
  std::promise<void> guestSawFirst;
  auto sawFirst = guestSawFirst.get_future();
  std::atomic<bool> waitedForGuest = false;
  Upstream upstream([&](int fd, const Message&, size_t) {
    auto chunk = [fd](const std::string& data) {
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", data.size());
      writeAll(fd, size + data + "\r\n");
    };
    writeAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n");
    chunk("event: message_start\ndata: {\"type\":\"message_start\"}\n\n");
    // The rest only once the guest has read the first event.
    waitedForGuest = sawFirst.wait_for(10s) == std::future_status::ready;
    chunk("event: content_block_delta\ndata: {\"delta\":\"hi\"}\n\n");
    chunk("event: message_stop\ndata: {}\n\n");
    writeAll(fd, "0\r\n\r\n");
  });
  auto b = broker(upstream);
  GuestConnection c(b, log_, logMutex_);
  c.send(post("/v1/messages", R"({"stream":true})"));
  bool streamed = c.readUntil("event: message_start\ndata: {\"type\":\"message_start\"}\n\n");
  EXPECT_TRUE(streamed) << "the first event did not reach the guest while the API was still answering; got: "
                        << c.raw();
  guestSawFirst.set_value();
  Message got = c.finish();
  EXPECT_TRUE(waitedForGuest);
  EXPECT_EQ(got.status(), 200);
  EXPECT_EQ(got.one("content-type"), "text/event-stream");
  EXPECT_TRUE(got.all("transfer-encoding").empty());
  EXPECT_EQ(got.body,
            "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
            "event: content_block_delta\ndata: {\"delta\":\"hi\"}\n\n"
            "event: message_stop\ndata: {}\n\n");
}

TEST_F(CredentialBrokerTest, TrailersOfAChunkedAnswerNeverCorruptTheGuestsBody) {
  Upstream upstream([](int fd, const Message&, size_t) {
    writeAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTrailer: X-Checksum\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n"
                 "6\r\ndata: \r\n3\r\nok\n\r\n0\r\nX-Checksum: abc\r\n\r\n");
  });
  auto b = broker(upstream);
  Message got = exchange(b, post("/v1/messages", "{}"));
  EXPECT_EQ(got.status(), 200);
  EXPECT_EQ(got.body, "data: ok\n");
}

TEST_F(CredentialBrokerTest, AGuestThatLeavesMidAnswerEndsTheServing) {
  Upstream upstream([](int fd, const Message&, size_t) {
    writeAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
    for (int i = 0; i < 2000; ++i)
      if (!writeAll(fd, "data: " + std::string(1000, 'x') + "\n\n")) return;
  });
  auto b = broker(upstream);
  GuestConnection c(b, log_, logMutex_);
  c.send(post("/v1/messages", "{}"));
  ASSERT_TRUE(c.readUntil("data: "));
  c.closeGuest();  // the destructor joins serve(): it must return
}

TEST_F(CredentialBrokerTest, OversizeHeadersAre431AndNeverReachTheApi) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  HttpRequestLimits limits;
  limits.maxHeaderBytes = 4096;
  limits.timeoutMs = 2000;
  auto b = broker(upstream, limits);
  Message got = exchange(b, post("/v1/messages", "{}", "X-Big: " + std::string(5000, 'a') + "\r\n"));
  EXPECT_EQ(got.status(), 431);
  EXPECT_NE(got.body.find("too large"), std::string::npos);
  EXPECT_TRUE(upstream.received().empty());
}

TEST_F(CredentialBrokerTest, AnOversizeBodyIs413AndNeverReachesTheApi) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  HttpRequestLimits limits;
  limits.maxBodyBytes = 1024;
  limits.timeoutMs = 2000;
  auto b = broker(upstream, limits);
  Message got = exchange(b, post("/v1/messages", std::string(1025, 'a')));
  EXPECT_EQ(got.status(), 413);
  got = exchange(b, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
                        std::string(2048, 'a') + "\r\n0\r\n\r\n");
  EXPECT_EQ(got.status(), 413);
  EXPECT_TRUE(upstream.received().empty());
}

TEST_F(CredentialBrokerTest, ARequestThatNeverCompletesIs408) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  HttpRequestLimits limits;
  limits.timeoutMs = 300;
  auto b = broker(upstream, limits);
  auto start = std::chrono::steady_clock::now();
  Message got = exchange(b, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"partial");
  EXPECT_EQ(got.status(), 408);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(upstream.received().empty());
}

TEST_F(CredentialBrokerTest, UpgradesAre501AndAbsoluteTargetsAre400) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  HttpRequestLimits limits;
  limits.timeoutMs = 2000;
  auto b = broker(upstream, limits);
  Message got =
      exchange(b, "GET /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  EXPECT_EQ(got.status(), 501);
  got = exchange(b, "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n");
  EXPECT_EQ(got.status(), 400);
  got = exchange(b, "GET http://127.0.0.1:1/v1/messages HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(got.status(), 400);
  got = exchange(b, "CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n");
  EXPECT_TRUE(got.status() == 400 || got.status() == 501) << got.status();
  EXPECT_TRUE(upstream.received().empty());
}

TEST_F(CredentialBrokerTest, TheGuestsHostHeaderNeverChoosesWhereTheTokenGoes) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  auto b = broker(upstream);
  Message got = exchange(b, "GET /v1/models HTTP/1.1\r\nHost: evil.example\r\nhost: evil2.example\r\n\r\n");
  EXPECT_EQ(got.status(), 200);
  auto requests = upstream.received();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].all("host").size(), 1u);
  EXPECT_EQ(requests[0].one("host").find("evil"), std::string::npos);
}

TEST_F(CredentialBrokerTest, AHeaderNameWithSpacesNeverSmugglesFramingOrCredentials) {
  Upstream upstream([](int fd, const Message&, size_t) { answer(fd, 200, "{}"); });
  auto b = broker(upstream);
  for (const char* header : {"Transfer-Encoding : chunked", "Content-Length : 0", "Authorization : Bearer guest",
                             "X-Api-Key : sk-ant-api03-guest", "Host : evil.example"}) {
    Message got = exchange(b, post("/v1/messages", "5\r\nhello\r\n0\r\n\r\n", std::string(header) + "\r\n"));
    EXPECT_TRUE(got.status() == 400 || got.status() == 200) << header << ": " << got.status();
  }
  // The parser takes "Transfer-Encoding " for chunked: without a length, the
  // API would get the header beside the broker's Content-Length (CL.TE).
  Message got = exchange(b, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n"
                            "5\r\nhello\r\n0\r\n\r\n");
  EXPECT_TRUE(got.status() == 400 || got.status() == 200) << got.status();
  for (const auto& r : upstream.received()) {
    EXPECT_TRUE(r.all("transfer-encoding").empty()) << r.firstLine;
    EXPECT_EQ(r.all("content-length").size(), 1u);
    EXPECT_EQ(r.all("authorization"), std::vector<std::string>{std::string("Bearer ") + kReal1});
    EXPECT_TRUE(r.all("x-api-key").empty());
    EXPECT_EQ(r.all("host").size(), 1u);
  }
}

TEST_F(CredentialBrokerTest, TraceIsNeverForwardedSoTheTokenIsNeverEchoed) {
  // An API that echoes the request (as TRACE does) would hand the guest the real token.
  Upstream upstream([](int fd, const Message& r, size_t) {
    std::string echo;
    for (const auto& [k, v] : r.headers) echo += k + ": " + v + "\n";
    writeAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: message/http\r\nContent-Length: " + std::to_string(echo.size()) +
                     "\r\n\r\n" + echo);
  });
  auto b = broker(upstream);
  for (const char* method : {"TRACE", "TRACK", "PROPFIND", "M-SEARCH", "PURGE", "LINK"}) {
    Message got = exchange(b, std::string(method) + " /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(got.status(), std::string_view(method) == "TRACK" ? 400 : 405) << method;  // TRACK: not HTTP to the parser
    EXPECT_EQ(got.body.find("REAL"), std::string::npos) << method << ": " << got.body;
  }
  for (const auto& r : upstream.received()) ADD_FAILURE() << "reached the API: " << r.firstLine;
}

TEST_F(CredentialBrokerTest, AnUnreachableApiIs502) {
  // A port nothing listens on.
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  s.reset();
  auto b = broker(url);
  Message got = exchange(b, post("/v1/messages", "{}"));
  EXPECT_EQ(got.status(), 502);
  EXPECT_EQ(got.body.find("REAL"), std::string::npos);
  expectNoTokenInLog();
}

TEST_F(CredentialBrokerTest, ConcurrentConnectionsAreServedIndependently) {
  Upstream upstream([](int fd, const Message& r, size_t) { answer(fd, 200, "{\"path\":\"" + r.target() + "\"}"); });
  auto b = broker(upstream);
  std::vector<std::thread> threads;
  std::vector<std::string> bodies(6);
  for (size_t i = 0; i < bodies.size(); ++i)
    threads.emplace_back([&, i] {
      bodies[i] = exchange(b, "GET /v1/models/" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n").body;
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < bodies.size(); ++i) EXPECT_EQ(bodies[i], "{\"path\":\"/v1/models/" + std::to_string(i) + "\"}");
  EXPECT_EQ(upstream.received().size(), bodies.size());
}

}  // namespace
}  // namespace airlock::secrets
