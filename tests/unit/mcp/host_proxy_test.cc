// airlock's MCP proxy (issue 20, `host: true`) against a real stdio MCP
// server (host_tool_server.py), with the guest's side as a socketpair that
// sends what a hostile agent would.

#include "mcp/host_proxy.h"

#include "mcp/guest_view.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "support/listening_process.h"
#include "support/scratch.h"

namespace airlock::mcp {
namespace {

using nlohmann::json;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Answer {
  int status = 0;
  std::string body;
};

class HostProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // as airlock's main() does
    std::ofstream(dir_.path() + "/secret") << "the host's secret";
  }

  HostServerConfig config(std::vector<std::string> extraEnv = {}) {
    HostServerConfig c;
    c.name = "notes";
    c.tools = {"echo"};
    c.process.argv = {"/usr/bin/python3", MCP_TEST_SERVER};
    c.process.environment = {"PATH=/usr/bin:/bin", "MCP_TEST_LOG=" + dir_.path() + "/calls",
                             "MCP_TEST_PID=" + dir_.path() + "/pid", "HOST_SECRET_FILE=" + dir_.path() + "/secret"};
    c.process.environment.insert(c.process.environment.end(), extraEnv.begin(), extraEnv.end());
    c.process.stderrPath = dir_.path() + "/stderr";
    return c;
  }

  std::shared_ptr<HostMcpProxy> start(std::vector<std::string> extraEnv = {}) {
    auto proxy = HostMcpProxy::start({config(std::move(extraEnv))});
    EXPECT_TRUE(proxy) << (proxy ? "" : proxy.error().message);
    return proxy ? *proxy : nullptr;
  }

  /// Sends one raw HTTP request as the guest and reads the whole answer.
  Answer exchange(const HostMcpProxy& proxy, const std::string& raw) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    Fd guest(fds[0]);
    // Written from another thread: a request larger than the socket's buffer
    // is read by serve() as it arrives.
    std::thread writer([&] { (void)writeAll(guest.get(), raw); });
    proxy.serve(Fd(fds[1]), [&](const std::string& line) { log_.push_back(line); });
    writer.join();
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(guest.get(), buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    Answer a;
    if (text.size() > 12) a.status = std::stoi(text.substr(9, 3));
    if (auto end = text.find("\r\n\r\n"); end != std::string::npos) a.body = text.substr(end + 4);
    return a;
  }

  Answer post(const HostMcpProxy& proxy, const json& message, const std::string& path = "/mcp/notes") {
    const std::string body = message.dump();
    return exchange(proxy, "POST " + path + " HTTP/1.1\r\nHost: 10.0.2.2:4183\r\nContent-Type: application/json\r\n" +
                               "Accept: application/json, text/event-stream\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body);
  }

  json call(const HostMcpProxy& proxy, const std::string& method, const json& params = json::object()) {
    Answer a = post(proxy, {{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", params}});
    EXPECT_EQ(a.status, 200) << a.body;
    json j = json::parse(a.body, nullptr, false);
    EXPECT_EQ(j.value("id", 0), 7) << a.body;
    return j;
  }

  std::string logText() const {
    std::string out;
    for (const auto& l : log_) out += l + "\n";
    return out;
  }

  TempDir dir_ = test::scratchDir("airlock-mcp-");
  std::vector<std::string> log_;
};

TEST_F(HostProxyTest, InitializeOffersToolsOnlyWithTheServersInfo) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  json j = call(*proxy, "initialize",
                {{"protocolVersion", "2025-03-26"},
                 {"capabilities", json::object()},
                 {"clientInfo", {{"name", "claude-code"}, {"version", "2"}}}});
  ASSERT_TRUE(j.contains("result")) << j.dump();
  EXPECT_EQ(j["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(j["result"]["capabilities"], json({{"tools", {{"listChanged", false}}}})) << "no resources or prompts";
  EXPECT_EQ(j["result"]["serverInfo"]["name"], "host-tool-server");
  EXPECT_EQ(j["result"]["instructions"], "Test tools.");
  // An unknown version gets the proxy's own.
  j = call(*proxy, "initialize", {{"protocolVersion", "1999-01-01"}});
  EXPECT_EQ(j["result"]["protocolVersion"], kProtocolVersion);
}

TEST_F(HostProxyTest, ToolsListShowsOnlyTheAllowlistAndLogsWhatItHid) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  json j = call(*proxy, "tools/list");
  ASSERT_TRUE(j["result"]["tools"].is_array()) << j.dump();
  ASSERT_EQ(j["result"]["tools"].size(), 1u) << j.dump();
  EXPECT_EQ(j["result"]["tools"][0]["name"], "echo");
  EXPECT_NE(logText().find("mcp notes: tools/list: 1 of 2 tools given (not allowed: host_secret)"), std::string::npos)
      << logText();
}

TEST_F(HostProxyTest, AnAllowedCallReachesTheServerAndIsLoggedWithItsArguments) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  json j = call(*proxy, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}, {"_meta", {{"x", 1}}}});
  ASSERT_TRUE(j.contains("result")) << j.dump();
  EXPECT_EQ(j["result"]["content"][0]["text"], "echo: hi");
  EXPECT_NE(logText().find(R"(mcp notes: tools/call echo {"text":"hi"}: ok in )"), std::string::npos) << logText();
  // The server got the name and the arguments only.
  EXPECT_EQ(readFile(dir_.path() + "/calls").find("_meta"), std::string::npos);
}

TEST_F(HostProxyTest, ACallOfAToolOutsideTheAllowlistIsRefusedAndNeverReachesTheServer) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  json j = call(*proxy, "tools/call", {{"name", "host_secret"}, {"arguments", {{"why", "curious"}}}});
  ASSERT_TRUE(j.contains("error")) << j.dump();
  EXPECT_EQ(j["error"]["code"], -32602);
  EXPECT_NE(j["error"]["message"].get<std::string>().find("not allowed"), std::string::npos);
  EXPECT_EQ(j.dump().find("the host's secret"), std::string::npos);
  EXPECT_NE(logText().find(R"(mcp notes: refused tools/call host_secret {"why":"curious"}: not in the allowlist)"),
            std::string::npos)
      << logText();
  EXPECT_EQ(readFile(dir_.path() + "/calls").find("host_secret"), std::string::npos) << "the server never saw it";
}

TEST_F(HostProxyTest, MethodsOtherThanToolsAreRefused) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  for (const char* method :
       {"resources/list", "resources/read", "prompts/get", "logging/setLevel", "server/discover"}) {
    json j = call(*proxy, method, {{"uri", "file:///etc/passwd"}});
    ASSERT_TRUE(j.contains("error")) << method << ": " << j.dump();
    EXPECT_EQ(j["error"]["code"], -32601) << method;
  }
  EXPECT_EQ(readFile(dir_.path() + "/calls").find("resources"), std::string::npos);
  EXPECT_EQ(call(*proxy, "ping")["result"], json::object());
}

TEST_F(HostProxyTest, MalformedAndOtherRequestsGetHttpErrors) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  EXPECT_EQ(exchange(*proxy, "GET /mcp/notes HTTP/1.1\r\nHost: x\r\n\r\n").status, 405) << "no server stream";
  EXPECT_EQ(exchange(*proxy, "DELETE /mcp/notes HTTP/1.1\r\nHost: x\r\n\r\n").status, 405);
  EXPECT_EQ(post(*proxy, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, "/mcp/other").status, 404);
  EXPECT_EQ(post(*proxy, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, "/mcp/notes/../other").status, 404);
  EXPECT_EQ(post(*proxy, json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}}})).status, 400)
      << "batches";
  EXPECT_EQ(post(*proxy, {{"id", 1}, {"method", "tools/list"}}).status, 400) << "no jsonrpc 2.0";
  EXPECT_EQ(post(*proxy, {{"jsonrpc", "2.0"}, {"id", json::object()}, {"method", "tools/list"}}).status, 400);
  EXPECT_EQ(exchange(*proxy, "POST /mcp/notes HTTP/1.1\r\nContent-Length: 5\r\n\r\n{oops").status, 400);
  // Notifications and responses are accepted and go nowhere.
  EXPECT_EQ(post(*proxy, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).status, 202);
  EXPECT_EQ(post(*proxy, {{"jsonrpc", "2.0"}, {"id", "srv-1"}, {"result", json::object()}}).status, 202);
  // A tools/call without a name.
  EXPECT_EQ(call(*proxy, "tools/call", {{"arguments", json::object()}})["error"]["code"], -32602);
}

TEST_F(HostProxyTest, TheServersOwnRequestsAreAnsweredByTheProxy) {
  auto proxy = start({"MCP_TEST_ASK_ROOTS=1"});
  ASSERT_TRUE(proxy);
  json j = call(*proxy, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "x"}}}});
  EXPECT_EQ(j["result"]["content"][0]["text"], "echo: x") << j.dump();
  const std::string calls = readFile(dir_.path() + "/calls");
  EXPECT_NE(calls.find(R"("id": "srv-1")"), std::string::npos) << calls;
  EXPECT_NE(calls.find("-32601"), std::string::npos) << calls;
}

TEST_F(HostProxyTest, ShutdownEndsTheServerAndLaterCallsFail) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  const pid_t pid = proxy->pid("notes");
  ASSERT_GT(pid, 0);
  EXPECT_EQ(std::to_string(pid), readFile(dir_.path() + "/pid"));
  proxy->shutdown();
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the server process is gone (and reaped)";
  json j = call(*proxy, "tools/call", {{"name", "echo"}});
  ASSERT_TRUE(j.contains("error")) << j.dump();
  EXPECT_EQ(j["error"]["code"], -32603);
}

size_t threadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// A run starts its host servers before it creates the jail's user
// namespace, which unshare(2) refuses to a multi-threaded process (EINVAL):
// starting them must not start a thread.
TEST_F(HostProxyTest, StartingTheServersStartsNoThread) {
  const size_t before = threadCount();
  auto proxy = start();
  ASSERT_TRUE(proxy);
  EXPECT_EQ(threadCount(), before);
  EXPECT_EQ(call(*proxy, "tools/list")["result"]["tools"].size(), 1u) << "the reader starts with the first request";
}

TEST_F(HostProxyTest, AServerThatDoesNotStartFailsTheRunNamingIt) {
  HostServerConfig c = config();
  c.process.argv = {"/bin/false"};
  auto proxy = HostMcpProxy::start({c});
  ASSERT_FALSE(proxy);
  EXPECT_NE(proxy.error().message.find("MCP server notes (on the host) did not start"), std::string::npos)
      << proxy.error().message;
  c.process.argv = {"/nonexistent/server"};
  proxy = HostMcpProxy::start({c});
  ASSERT_FALSE(proxy);
  EXPECT_NE(proxy.error().message.find("/nonexistent/server"), std::string::npos) << proxy.error().message;
}

// A guest's JSON nested deeper than the proxy takes would overflow a
// connection thread's stack when copied or written: refused before it is
// parsed, and airlock lives on.
TEST_F(HostProxyTest, DeeplyNestedJsonIsRefusedBeforeItIsParsed) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string body =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":)" + deep + "}}}";
  Answer a = exchange(*proxy,
                      "POST /mcp/notes HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_NE(a.body.find("nested deeper than 64 levels"), std::string::npos) << a.body;
  EXPECT_EQ(call(*proxy, "ping")["result"], json::object()) << "still serving";
}

TEST_F(HostProxyTest, BeyondTheRequestsAtOnceTheAnswerIs503) {
  auto started = HostMcpProxy::start({config()}, HostProxyLimits{.maxInFlight = 0});
  ASSERT_TRUE(started);
  EXPECT_EQ(post(**started, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}).status, 503);
}

// A server's error that is not a JSON-RPC error object reaches the guest as
// the proxy's own error, and airlock does not fall over on it.
TEST_F(HostProxyTest, AServersMalformedErrorIsReplaced) {
  auto proxy = start({"MCP_TEST_BAD_ERROR=1"});
  ASSERT_TRUE(proxy);
  json j = call(*proxy, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "x"}}}});
  ASSERT_TRUE(j.contains("error")) << j.dump();
  EXPECT_EQ(j["error"]["code"], -32603);
  EXPECT_NE(logText().find("tools/call echo"), std::string::npos) << logText();
}

// A guest's tool name cannot pass for the rest of a log line.
TEST_F(HostProxyTest, AnOddToolNameIsQuotedInTheLog) {
  auto proxy = start();
  ASSERT_TRUE(proxy);
  call(*proxy, "tools/call", {{"name", "x {}: ok in 0.01 s"}});
  EXPECT_NE(logText().find(R"(refused tools/call "x {}: ok in 0.01 s" {}: not in the allowlist)"), std::string::npos)
      << logText();
}

/// remote_tool_server.py on 127.0.0.1, killed with the test.
class RemoteToolServer {
 public:
  RemoteToolServer(const std::string& dir, const std::string& token)
      : log_(dir + "/remote.log"),
        process_({"/usr/bin/python3", MCP_TEST_REMOTE_SERVER, token, log_}, dir + "/remote.out") {}
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()) + "/mcp"; }
  int port() const { return process_.port(); }
  /// What it received, one JSON object per request.
  std::vector<json> requests() const {
    std::vector<json> out;
    std::istringstream in(readFile(log_));
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

 private:
  std::string log_;
  test::ListeningProcess process_;
};

HostServerConfig remoteConfig(const std::string& url, const std::string& token) {
  HostServerConfig c;
  c.name = "docs";
  c.tools = {"echo"};
  c.remote = RemoteServerOptions{.url = url, .token = token};
  return c;
}

// `url:` (issue 20): the proxy reaches a remote streamable-HTTP server from
// the host with the token, keeps its session, reads its SSE answer (the
// stream stays open: the proxy stops reading once the answer is in), and
// the guest gets the allowed tools only and never the token.
TEST_F(HostProxyTest, ARemoteServerIsReachedWithTheTokenTheGuestNeverSees) {
  RemoteToolServer remote(dir_.path(), "remote-token-123");
  ASSERT_NE(remote.port(), 0);
  auto started = HostMcpProxy::start({remoteConfig(remote.url(), "remote-token-123")});
  ASSERT_TRUE(started) << started.error().message;
  const HostMcpProxy& proxy = **started;
  auto guest = [&](const std::string& method, const json& params) {
    Answer a = post(proxy, {{"jsonrpc", "2.0"}, {"id", 3}, {"method", method}, {"params", params}}, "/mcp/docs");
    EXPECT_EQ(a.body.find("remote-token-123"), std::string::npos) << a.body;
    return json::parse(a.body, nullptr, false);
  };
  json tools = guest("tools/list", json::object());
  ASSERT_EQ(tools["result"]["tools"].size(), 1u) << tools.dump();
  EXPECT_EQ(tools["result"]["tools"][0]["name"], "echo");
  const auto began = std::chrono::steady_clock::now();
  json echo = guest("tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}});
  EXPECT_EQ(echo["result"]["content"][0]["text"], "remote echo: hi") << echo.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(10)) << "waited for the stream to close";
  json refused = guest("tools/call", {{"name", "delete_everything"}});
  EXPECT_EQ(refused["error"]["code"], -32602) << refused.dump();
  (*started)->shutdown();
  auto got = remote.requests();
  ASSERT_GE(got.size(), 5u);
  for (const auto& r : got) EXPECT_EQ(r["authorization"], "Bearer remote-token-123") << r.dump();
  EXPECT_EQ(got[0]["session"], nullptr) << "initialize has no session yet";
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i]["session"], "session-42") << got[i].dump();
    EXPECT_EQ(got[i]["version"], kProtocolVersion) << got[i].dump();
  }
  EXPECT_EQ(got.back()["method"], "DELETE") << "the session is ended";
  for (const auto& r : got) EXPECT_EQ(r.dump().find("delete_everything"), std::string::npos) << r.dump();
}

TEST_F(HostProxyTest, ARemoteServerThatRefusesTheTokenFailsTheStartNamingIt) {
  RemoteToolServer remote(dir_.path(), "right");
  ASSERT_NE(remote.port(), 0);
  auto started = HostMcpProxy::start({remoteConfig(remote.url(), "wrong")});
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("MCP server docs (" + remote.url() + ") did not answer"), std::string::npos)
      << started.error().message;
  EXPECT_NE(started.error().message.find("HTTP 401"), std::string::npos) << started.error().message;
  EXPECT_EQ(started.error().message.find("wrong"), std::string::npos) << "the token is never in a message";
}

}  // namespace
}  // namespace airlock::mcp
