#include "secrets/http_request.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/fd.h"

namespace airlock::secrets {
namespace {

/// A connected pair: the test writes as the guest on `guest`, the reader reads `broker`.
struct Connection {
  Connection() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
      guest.reset(fds[0]);
      broker.reset(fds[1]);
    }
  }
  Fd guest;
  Fd broker;
};

/// Reads one request after `text` was sent (and the guest's side left open).
Result<HttpRequest> readAfter(const std::string& text, const HttpRequestLimits& limits = {}) {
  Connection c;
  EXPECT_TRUE(c.guest && c.broker);
  std::thread writer([&] { writeAll(c.guest.get(), text); });
  auto r = readHttpRequest(c.broker.get(), limits);
  writer.join();
  return r;
}

HttpRequestLimits quick() {
  HttpRequestLimits limits;
  limits.timeoutMs = 300;
  return limits;
}

TEST(HttpRequest, ReadsTheRequestLineHeadersInOrderAndTheBody) {
  auto r = readAfter(
      "POST /v1/messages?beta=true HTTP/1.1\r\nHost: 10.0.2.2:4180\r\nContent-Type: application/json\r\n"
      "anthropic-version: 2023-06-01\r\nContent-Length: 11\r\n\r\n{\"a\":\"b c\"}");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->method, "POST");
  EXPECT_EQ(r->target, "/v1/messages?beta=true");
  ASSERT_EQ(r->headers.size(), 4u);
  EXPECT_EQ(r->headers[0].first, "Host");
  EXPECT_EQ(r->headers[2].first, "anthropic-version");
  EXPECT_EQ(r->headers[2].second, "2023-06-01");
  EXPECT_EQ(r->body, "{\"a\":\"b c\"}");
  ASSERT_NE(r->header("CONTENT-TYPE"), nullptr);
  EXPECT_EQ(*r->header("content-type"), "application/json");
  EXPECT_EQ(r->header("content-typ"), nullptr);
  EXPECT_EQ(r->header("X-Api-Key"), nullptr);
}

TEST(HttpRequest, ARequestDribbledOneByteAtATimeIsReadWhole) {
  const std::string text =
      "POST /v1/x HTTP/1.1\r\nHost: h\r\nX-Long-Header-Name: some value\r\nContent-Length: 5\r\n\r\nhello";
  Connection c;
  std::thread writer([&] {
    for (char ch : text) {
      writeAll(c.guest.get(), std::string(1, ch));
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  auto r = readHttpRequest(c.broker.get());
  writer.join();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->target, "/v1/x");
  ASSERT_NE(r->header("x-long-header-name"), nullptr);
  EXPECT_EQ(*r->header("x-long-header-name"), "some value");
  EXPECT_EQ(r->body, "hello");
}

TEST(HttpRequest, AChunkedBodyIsDecoded) {
  auto r = readAfter(
      "POST /v1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->body, "hello world!");
}

TEST(HttpRequest, OnlyTheFirstRequestIsReadAndWhatFollowsIsNotPartOfIt) {
  auto r = readAfter(
      "POST /v1/a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
      "GET /v1/b HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->target, "/v1/a");
  EXPECT_EQ(r->body, "abc");
  EXPECT_EQ(r->headers.size(), 2u);
}

TEST(HttpRequest, AHeaderBlockOverTheCapIs431) {
  HttpRequestLimits limits = quick();
  limits.maxHeaderBytes = 1024;
  auto r = readAfter("GET /v1/x HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 431);
  // Many small headers count as well.
  std::string many = "GET /v1/x HTTP/1.1\r\n";
  for (int i = 0; i < 200; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  r = readAfter(many + "\r\n", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 431);
  // A long target as well.
  r = readAfter("GET /v1/" + std::string(2000, 'a') + " HTTP/1.1\r\n\r\n", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 431);
}

TEST(HttpRequest, ADeclaredBodyOverTheCapIs413BeforeItArrives) {
  HttpRequestLimits limits = quick();
  limits.maxBodyBytes = 100;
  // Only the header is sent: the refusal comes from Content-Length alone (no 408).
  auto r = readAfter("POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 413);
  r = readAfter("POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999\r\n\r\n", limits);
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().code == 413 || r.error().code == 400) << r.error().code;
}

TEST(HttpRequest, AChunkedBodyOverTheCapIs413) {
  HttpRequestLimits limits = quick();
  limits.maxBodyBytes = 100;
  std::string text = "POST /v1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 20; ++i) text += "a\r\n0123456789\r\n";
  auto r = readAfter(text + "0\r\n\r\n", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 413);
  // Exactly at the cap is fine.
  text = "POST /v1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 10; ++i) text += "a\r\n0123456789\r\n";
  r = readAfter(text + "0\r\n\r\n", limits);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->body.size(), 100u);
}

TEST(HttpRequest, ARequestThatNeverCompletesIs408) {
  auto start = std::chrono::steady_clock::now();
  auto r = readAfter("POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc", quick());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 408);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  r = readAfter("", quick());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 408);
}

TEST(HttpRequest, TheTimeoutCoversTheWholeRequestNotEachRead) {
  // One byte every 50 ms never lets a 300 ms read time out, but the request does.
  Connection c;
  std::atomic<bool> stop = false;
  std::thread writer([&] {
    std::string text = "POST /v1/x HTTP/1.1\r\nHost: h\r\nX-Slow: " + std::string(1000, 'a');
    for (char ch : text) {
      if (stop) return;
      writeAll(c.guest.get(), std::string(1, ch));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  auto start = std::chrono::steady_clock::now();
  auto r = readHttpRequest(c.broker.get(), quick());
  stop = true;
  writer.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 408);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(HttpRequest, AConnectionClosedEarlyIs400) {
  Connection c;
  writeAll(c.guest.get(), "POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc");
  c.guest.reset();
  auto r = readHttpRequest(c.broker.get(), quick());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 400);
}

TEST(HttpRequest, UpgradesAre501) {
  auto r = readAfter("GET /v1/x HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", quick());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 501);
  r = readAfter("GET /v1/x HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n", quick());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 501);
}

TEST(HttpRequest, OnlyOriginFormTargetsAreRead) {
  for (const char* line : {"GET http://evil.example/v1/x HTTP/1.1", "GET https://api.anthropic.com/v1/x HTTP/1.1",
                           "OPTIONS * HTTP/1.1", "CONNECT evil.example:443 HTTP/1.1", "GET v1/x HTTP/1.1"}) {
    auto r = readAfter(std::string(line) + "\r\nHost: h\r\n\r\n", quick());
    ASSERT_FALSE(r) << line;
    EXPECT_TRUE(r.error().code == 400 || r.error().code == 501) << line << ": " << r.error().code;
  }
}

TEST(HttpRequest, MalformedRequestsAre400) {
  using namespace std::string_literals;
  for (const std::string& text : {
           "GARBAGE\r\n\r\n"s,
           "POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n"s,
           // Two lengths, or a length and chunked: which body is meant is ambiguous (smuggling).
           "POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde"s,
           "POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"s,
           "POST /v1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\nabc"s,
           "POST /v1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"s,
           "GET /v1/x HTTP/1.1\r\nX-Nul: a\0b\r\n\r\n"s,
           "GET /v1/x HTTP/1.1\r\nX-Ctl: a\x01b\r\n\r\n"s,
           "GET /v1/x\x7f HTTP/1.1\r\n\r\n"s,
       }) {
    auto r = readAfter(text, quick());
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, 400) << text;
  }
}

TEST(HttpRequest, AHeaderNameThatIsNotATokenIs400) {
  // "Transfer-Encoding : chunked" must not survive as a header named
  // "Transfer-Encoding " that escapes the broker's filters and reaches the
  // API next to the broker's own framing.
  for (const char* header : {"Transfer-Encoding : chunked", "Authorization : Bearer guest", "X Y: z",
                             "Content-Length\t: 3", "X-A\"b: c", "(x): y"}) {
    auto r = readAfter("POST /v1/x HTTP/1.1\r\nHost: h\r\n" + std::string(header) + "\r\nContent-Length: 0\r\n\r\n",
                       quick());
    if (r) {
      for (const auto& [name, value] : r->headers)
        EXPECT_EQ(name.find_first_of(" \t\"()"), std::string::npos) << "header name '" << name << "' from " << header;
    } else {
      EXPECT_EQ(r.error().code, 400) << header;
    }
  }
}

TEST(HttpRequest, AFoldedHeaderValueNeverCarriesALineBreak) {
  auto r = readAfter("GET /v1/x HTTP/1.1\r\nHost: h\r\nX-A: a\r\n Authorization: Bearer evil\r\n\r\n", quick());
  if (!r) {
    EXPECT_EQ(r.error().code, 400);
    return;
  }
  for (const auto& [name, value] : r->headers) {
    EXPECT_EQ(name.find_first_of("\r\n"), std::string::npos);
    EXPECT_EQ(value.find_first_of("\r\n"), std::string::npos);
    EXPECT_NE(name, " Authorization");
  }
}

}  // namespace
}  // namespace airlock::secrets
