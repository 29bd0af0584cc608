// Attacks on airlock's MCP proxy (issue 20): a hostile guest on one side,
// misbehaving stdio and remote servers (attack_*_server.py) on the other.
// Each test is an attack that once worked or that a reviewer expected to.

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "mcp/guest_view.h"
#include "mcp/host_proxy.h"
#include "support/listening_process.h"
#include "support/scratch.h"

namespace airlock::mcp {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Reply {
  int status = 0;
  std::string head, body;
};

Reply parseReply(const std::string& text) {
  Reply r;
  if (text.size() > 12 && text.starts_with("HTTP/1.1 ")) r.status = std::atoi(text.c_str() + 9);
  auto end = text.find("\r\n\r\n");
  r.head = text.substr(0, end);
  if (end != std::string::npos) r.body = text.substr(end + 4);
  return r;
}

std::string httpPost(const std::string& body, const std::string& path = "/mcp/notes") {
  return "POST " + path + " HTTP/1.1\r\nHost: 10.0.2.2:4183\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string rpc(const std::string& method, const json& params, const json& id = 1) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
}

/// attack_remote_server.py in one of its modes.
class RemoteAttacker {
 public:
  RemoteAttacker(const std::string& dir, const std::string& token, const std::string& mode)
      : process_({"/usr/bin/python3", ATTACK_REMOTE_SERVER, token, mode}, dir + "/remote-" + mode + ".out") {}
  std::string url(const std::string& query = "") const {
    return "http://127.0.0.1:" + std::to_string(process_.port()) + "/mcp" + query;
  }

 private:
  test::ListeningProcess process_;
};

class McpAttack : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    std::ofstream(dir_.path() + "/secret") << "the host's secret";
  }

  /// Server "notes" allowing echo: `script` run by python3 with `env` and MCP_TEST_LOG.
  HostServerConfig stdioServer(const std::string& script, std::vector<std::string> env) {
    HostServerConfig c;
    c.name = "notes";
    c.tools = {"echo"};
    c.process.argv = {"/usr/bin/python3", script};
    env.push_back("PATH=/usr/bin:/bin");
    env.push_back("MCP_TEST_LOG=" + dir_.path() + "/calls");
    c.process.environment = std::move(env);
    c.process.stderrPath = dir_.path() + "/stderr";
    return c;
  }
  HostServerConfig hostTool() { return stdioServer(MCP_TEST_SERVER, {"HOST_SECRET_FILE=" + dir_.path() + "/secret"}); }
  HostServerConfig attackStdio(const std::string& mode) { return stdioServer(ATTACK_STDIO_SERVER, {"MODE=" + mode}); }
  HostServerConfig remote(const std::string& url) {
    HostServerConfig c;
    c.name = "docs";
    c.tools = {"echo"};
    c.remote = RemoteServerOptions{.url = url, .token = kToken};
    return c;
  }
  std::shared_ptr<HostMcpProxy> start(std::vector<HostServerConfig> cs, HostProxyLimits limits = {}) {
    auto p = HostMcpProxy::start(std::move(cs), limits);
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    return p ? *p : nullptr;
  }

  ProxyLogFn logFn() {
    return [this](const std::string& line) {
      std::lock_guard lock(logMutex_);
      log_.push_back(line);
    };
  }
  std::string logText() {
    std::lock_guard lock(logMutex_);
    std::string out;
    for (const auto& l : log_) out += l + "\n";
    return out;
  }

  /// One raw exchange as the guest (reads the whole answer).
  Reply exchange(const HostMcpProxy& proxy, const std::string& raw) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    Fd guest(fds[0]);
    std::thread writer([&] { (void)writeAll(guest.get(), raw); });
    std::string text;
    std::thread reader([&] {  // read as it comes: an answer larger than the socket's buffer
      char buf[65536];
      for (ssize_t n; (n = ::read(guest.get(), buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    });
    proxy.serve(Fd(fds[1]), logFn());
    writer.join();
    reader.join();
    return parseReply(text);
  }
  json call(const HostMcpProxy& proxy, const std::string& body, const std::string& path = "/mcp/notes") {
    Reply r = exchange(proxy, httpPost(body, path));
    json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded()) j = json{{"http", r.status}, {"raw", r.body.substr(0, 300)}};
    return j;
  }

  static constexpr const char* kToken = "tok-SECRET-9f8e7d";
  TempDir dir_ = test::scratchDir("airlock-mcp-attack-");
  std::mutex logMutex_;
  std::vector<std::string> log_;
};

// ---------------------------------------------------------------- allowlist

TEST_F(McpAttack, AllowlistBypassAttemptsNeverReachTheServer) {
  auto proxy = start({hostTool()});
  ASSERT_TRUE(proxy);
  const std::vector<std::string> bodies = {
      // duplicate keys (nlohmann: last wins; the proxy re-encodes, so no parser differential)
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"host_secret"}})",
      // unicode escapes
      R"({"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"\u0068ost_secret"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"host_secret\u0000"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo\u0000host_secret"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ho\ud800st_secret"}})",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"host_secret\xff\"}}",
      // odd shapes
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":["host_secret"]})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["host_secret"]}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":"x","params":{"name":"host_secret"}}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"host_secret","arguments":[1]}})",
      R"({"jsonrpc":"2.0","id":1,"method":"TOOLS/CALL","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call ","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}})",
      // ids
      R"({"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"tools/call","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"host_secret"}})",
      // notifications and "responses" that carry a call
      R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"host_secret"}})",
      R"({"jsonrpc":"2.0","id":1,"result":{},"method":"tools/call","params":{"name":"host_secret"}})",
      // two messages, trailing garbage, a BOM, jsonrpc tricks
      R"({"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"host_secret"}})",
      "\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"host_secret\"}}",
      R"({"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"host_secret"}})",
  };
  for (const auto& body : bodies) {
    json j = call(*proxy, body);
    SCOPED_TRACE(body);
    EXPECT_EQ(j.dump(-1, ' ', false, json::error_handler_t::replace).find("the host's secret"), std::string::npos);
    EXPECT_FALSE(j.contains("result")) << j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  // The allowed one with a huge id and unicode-escaped name works (and reaches the server as "echo").
  json ok = call(
      *proxy,
      R"({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"\u0065cho","arguments":{"text":"a"}}})");
  EXPECT_EQ(ok["result"]["content"][0]["text"], "echo: a") << ok.dump();
  const std::string calls = slurp(dir_.path() + "/calls");
  EXPECT_EQ(calls.find("host_secret"), std::string::npos) << calls;
  EXPECT_EQ(calls.find("resources"), std::string::npos) << calls;
  std::cerr << "LOG:\n" << logText().substr(0, 4000);
}

// "Every tools/call, allowed or refused, is logged": refusals for a bad
// shape (no name, arguments that are not an object) too.
TEST_F(McpAttack, EveryRefusedToolsCallIsLogged) {
  auto proxy = start({hostTool()});
  ASSERT_TRUE(proxy);
  call(*proxy, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"host_secret","arguments":"steal"}})");
  call(*proxy, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["host_secret"]}})");
  EXPECT_EQ(log_.size(), 2u) << logText();
}

// ---------------------------------------------------------------- HTTP

TEST_F(McpAttack, HttpTricks) {
  auto proxy = start({hostTool()});
  ASSERT_TRUE(proxy);
  const std::string ping = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  const std::string secretCall = rpc("tools/call", {{"name", "host_secret"}});
  const std::string echoCall = rpc("tools/call", {{"name", "echo"}, {"arguments", {{"text", "first"}}}});
  auto status = [&](const std::string& raw) { return exchange(*proxy, raw).status; };
  // chunked body: decoded and served
  EXPECT_EQ(status("POST /mcp/notes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", ping.size(), ping)),
            200);
  // pipelined: only the first request is served
  EXPECT_EQ(status(httpPost(echoCall) + httpPost(secretCall)), 200);
  EXPECT_EQ(slurp(dir_.path() + "/calls").find("host_secret"), std::string::npos);
  // CL + TE both: refused by the parser
  EXPECT_EQ(status("POST /mcp/notes HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", ping.size(), ping)),
            400);
  EXPECT_EQ(status("POST http://10.0.2.2:4183/mcp/notes HTTP/1.1\r\nContent-Length: " + std::to_string(ping.size()) +
                   "\r\n\r\n" + ping),
            400);
  EXPECT_EQ(status(httpPost(ping, "/mcp/notes%2F..")), 404);
  EXPECT_EQ(status(httpPost(ping, "/mcp//notes")), 404);
  EXPECT_EQ(status(httpPost(ping, "/mcp/notes/")), 404);
  EXPECT_EQ(status(httpPost(ping, "/mcp/notes?x=1")), 200);
  EXPECT_EQ(status(httpPost(ping, "/mcp/notes#x")), 404);
  EXPECT_EQ(status(httpPost(ping, "/mcp/%6eotes")), 404);
  EXPECT_EQ(status("HEAD /mcp/notes HTTP/1.1\r\n\r\n"), 405);
  EXPECT_EQ(status("OPTIONS * HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("POST /mcp/notes HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " +
                   std::to_string(ping.size()) + "\r\n\r\n" + ping),
            200);
  EXPECT_EQ(status("POST /mcp/notes HTTP/1.1\r\n\r\n" + ping), 400) << "no Content-Length: empty body";
  EXPECT_EQ(status("POST /mcp/notes HTTP/1.0\r\nContent-Length: " + std::to_string(ping.size()) + "\r\n\r\n" + ping),
            200);
  EXPECT_EQ(status("POST /mcp/notes HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /mcp/notes HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"), 501);
  EXPECT_EQ(status("POST /mcp/notes HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n"), 413);
}

// Slots held by connections that send nothing: bounded by the request timeout.
TEST_F(McpAttack, SlowlorisHoldsSlotsOnlyUntilTheRequestTimeout) {
  auto proxy = start({hostTool()}, HostProxyLimits{.requestTimeoutMs = 4000, .maxInFlight = 2});
  ASSERT_TRUE(proxy);
  std::vector<std::thread> held;
  std::vector<Fd> guests;
  std::atomic<int> started{0};
  for (int i = 0; i < 2; ++i) {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    guests.emplace_back(fds[0]);
    (void)writeAll(fds[0], "POST /mcp/notes HTTP/1.1\r\n");  // and never more
    held.emplace_back([&, fd = fds[1]] {
      ++started;
      proxy->serve(Fd(fd), logFn());
    });
  }
  // Once both threads are in serve() (a busy machine may start them late),
  // a third request is turned away.
  while (started < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(exchange(*proxy, httpPost(R"({"jsonrpc":"2.0","id":1,"method":"ping"})")).status, 503);
  for (auto& t : held) t.join();
  EXPECT_EQ(exchange(*proxy, httpPost(R"({"jsonrpc":"2.0","id":1,"method":"ping"})")).status, 200);
}

// A guest that never reads its answer must not hold a proxy thread (and a
// slot) for ever.
TEST_F(McpAttack, AGuestThatNeverReadsItsAnswerDoesNotHoldAThreadForever) {
  auto proxy = start({hostTool()}, HostProxyLimits{.guestWriteTimeoutSeconds = 2});
  ASSERT_TRUE(proxy);
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  Fd guest(fds[0]);
  // An allowed echo of 900 KB: the answer is larger than the socket's buffer.
  const std::string body = rpc("tools/call", {{"name", "echo"}, {"arguments", {{"text", std::string(900000, 'A')}}}});
  std::thread writer([&] { (void)writeAll(guest.get(), httpPost(body)); });
  auto done = std::async(std::launch::async, [&, fd = fds[1]] { proxy->serve(Fd(fd), logFn()); });
  writer.join();
  const bool returned = done.wait_for(std::chrono::seconds(45)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "serve() still blocked writing to a guest that does not read (45 s)";
  guest.reset();  // unblocks it
  done.wait();
}

// ---------------------------------------------------------------- log

TEST_F(McpAttack, AHugeRefusedToolNameIsCutInTheLog) {
  auto proxy = start({hostTool()});
  ASSERT_TRUE(proxy);
  call(*proxy, rpc("tools/call", {{"name", std::string(1000000, 'x') + "\x01"}}));
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_LT(log_[0].size(), 10000u) << "one refused call wrote a log line of " << log_[0].size()
                                    << " bytes; 1000 of them before the cap: ~1 GB";
}

TEST_F(McpAttack, ControlCharactersInNamesStayOnOneLogLine) {
  auto proxy = start({attackStdio("names")});
  ASSERT_TRUE(proxy);
  call(*proxy, rpc("tools/call", {{"name", "a\nmcp notes: tools/call echo {}: ok in 0.01 s"}}));
  json j = call(*proxy, rpc("tools/list", json::object()));
  EXPECT_EQ(j["result"]["tools"].size(), 1u);
  for (const auto& l : log_) {
    EXPECT_EQ(l.find('\n'), std::string::npos) << "a server's tool name breaks the log line: " << l.substr(0, 200);
    EXPECT_LT(l.size(), 100000u) << "a tools/list log line of " << l.size() << " bytes";
  }
}

// ---------------------------------------------------------------- stdio servers

TEST_F(McpAttack, AStdioServersNonBooleanIsErrorIsNotA500AndTheCallIsLogged) {
  auto proxy = start({attackStdio("isError_null")});
  ASSERT_TRUE(proxy);
  Reply r = exchange(*proxy, httpPost(rpc("tools/call", {{"name", "echo"}, {"arguments", {{"text", "audit-me"}}}})));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(logText().find("audit-me"), std::string::npos) << "the allowed call is not in the log: " << logText();
}

TEST_F(McpAttack, AStdioServersHugeLineEndsItAndTheProxyLives) {
  auto proxy = start({attackStdio("longline")});
  ASSERT_TRUE(proxy);
  const auto t = Clock::now();
  json j = call(*proxy, rpc("tools/call", {{"name", "echo"}}));
  std::cerr << "longline answer after " << since(t) << " s: " << j.dump().substr(0, 300) << "\n";
  EXPECT_EQ(j["error"]["code"], -32603);
  EXPECT_EQ(call(*proxy, R"({"jsonrpc":"2.0","id":1,"method":"ping"})")["result"], json::object());
}

// A server that ignores SIGTERM and stops reading its input: stop() is
// documented as "waiting requests fail at once".
TEST_F(McpAttack, ShutdownIsPromptWhenAServerStopsReadingAndIgnoresSigterm) {
  auto proxy = start({attackStdio("noread")});
  ASSERT_TRUE(proxy);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string big = rpc("tools/call", {{"name", "echo"}, {"arguments", {{"text", std::string(500000, 'B')}}}});
  std::vector<std::thread> calls;
  for (int i = 0; i < 2; ++i) calls.emplace_back([&] { exchange(*proxy, httpPost(big)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const auto t = Clock::now();
  proxy->shutdown();
  const double took = since(t);
  for (auto& c : calls) c.join();
  EXPECT_LT(took, 5.0) << "shutdown() took " << took << " s (a sender holds writeMutex_ until its 30 s deadline)";
}

TEST_F(McpAttack, ShutdownWhileCallsAreInFlightAndRequestsAfterIt) {
  for (int round = 0; round < 5; ++round) {
    auto proxy = start({hostTool()});
    ASSERT_TRUE(proxy);
    std::vector<std::thread> calls;
    std::atomic<int> ok{0}, failed{0};
    for (int i = 0; i < 12; ++i)
      calls.emplace_back([&, i] {
        json j = call(*proxy, rpc(i % 2 ? "tools/call" : "tools/list",
                                  {{"name", "echo"}, {"arguments", {{"text", std::to_string(i)}}}}));
        (j.contains("result") ? ok : failed)++;
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(round * 10));
    proxy->shutdown();
    for (auto& c : calls) c.join();
    json after = call(*proxy, rpc("tools/call", {{"name", "echo"}}));
    EXPECT_EQ(after["error"]["code"], -32603) << after.dump();
    proxy->shutdown();
    proxy.reset();  // destructor joins the reader
  }
}

// ---------------------------------------------------------------- remote servers

TEST_F(McpAttack, ARemoteSseStreamWithoutTheAnswerIsBoundedByTheCallTimeout) {
  RemoteAttacker server(dir_.path(), kToken, "sse_forever");
  auto proxy = start({remote(server.url())}, HostProxyLimits{.call = std::chrono::milliseconds(3000)});
  ASSERT_TRUE(proxy);
  const auto t = Clock::now();
  json j = call(*proxy, rpc("tools/call", {{"name", "echo"}}), "/mcp/docs");
  EXPECT_LT(since(t), 6.0);
  EXPECT_EQ(j["error"]["code"], -32603) << j.dump();
}

// Upstream::stop(): "requests in flight fail soon", not at their timeout
// (600 s in airlock), even while the server streams progress events.
TEST_F(McpAttack, ShutdownEndsARemoteCallInFlight) {
  RemoteAttacker server(dir_.path(), kToken, "sse_forever");
  auto proxy = start({remote(server.url())}, HostProxyLimits{.call = std::chrono::milliseconds(20000)});
  ASSERT_TRUE(proxy);
  auto inFlight = std::async(std::launch::async, [&] {
    return call(*proxy, rpc("tools/call", {{"name", "echo"}}), "/mcp/docs");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t = Clock::now();
  proxy->shutdown();
  inFlight.wait();
  EXPECT_LT(since(t), 5.0) << "the call in flight ended " << since(t) << " s after shutdown() (its limit: 20 s)";
}

TEST_F(McpAttack, TheTokenAndTheUrlsSecretsNeverReachTheGuest) {
  for (const std::string mode : {"status413", "redirect", "huge", "deep"}) {
    SCOPED_TRACE(mode);
    RemoteAttacker server(dir_.path(), kToken, mode);
    // A URL with a key in its query (isRemoteMcpUrl() takes it).
    auto proxy = start({remote(server.url("?api_key=URLKEY-123"))});
    ASSERT_TRUE(proxy);
    json j = call(*proxy, rpc("tools/call", {{"name", "echo"}}), "/mcp/docs");
    const std::string text = j.dump();
    std::cerr << mode << ": " << text.substr(0, 300) << "\n";
    EXPECT_EQ(text.find(kToken), std::string::npos) << text;
    EXPECT_EQ(text.find("URLKEY-123"), std::string::npos) << "the guest reads the URL's key: " << text;
    EXPECT_EQ(logText().find(kToken), std::string::npos) << logText();
    EXPECT_EQ(call(*proxy, R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "/mcp/docs")["result"], json::object());
  }
}

TEST_F(McpAttack, ARemoteServersNonBooleanIsErrorIsNotA500) {
  RemoteAttacker server(dir_.path(), kToken, "isError_null");
  auto proxy = start({remote(server.url())});
  ASSERT_TRUE(proxy);
  Reply r = exchange(*proxy, httpPost(rpc("tools/call", {{"name", "echo"}}), "/mcp/docs"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find(kToken), std::string::npos);
}

// MCP allows the initialize answer as an SSE stream (which may stay open):
// the proxy stops reading once the answer is in, and keeps the
// Mcp-Session-Id that came with it (the server demands it afterwards).
TEST_F(McpAttack, ASessionIdGivenWithAnSseInitializeIsKept) {
  RemoteAttacker server(dir_.path(), kToken, "sse_init");
  auto proxy = HostMcpProxy::start({remote(server.url())});
  ASSERT_TRUE(proxy) << proxy.error().message;
}

TEST_F(McpAttack, ARemoteServersToolNameCannotBreakTheLogLine) {
  RemoteAttacker server(dir_.path(), kToken, "names");
  auto proxy = start({remote(server.url())});
  ASSERT_TRUE(proxy);
  call(*proxy, rpc("tools/list", json::object()), "/mcp/docs");
  for (const auto& l : log_) EXPECT_EQ(l.find('\n'), std::string::npos) << l;
}

}  // namespace
}  // namespace airlock::mcp
