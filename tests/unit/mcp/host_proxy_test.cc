// airlock's MCP proxy (issue 20, `host: true`) against a real stdio MCP
// server (host_tool_server.py), with the guest's side as a socketpair that
// sends what a hostile agent would.

#include "mcp/host_proxy.h"

#include "mcp/guest_view.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fd.h"
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
    EXPECT_TRUE(writeAll(guest.get(), raw));
    proxy.serve(Fd(fds[1]), [&](const std::string& line) { log_.push_back(line); });
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

}  // namespace
}  // namespace airlock::mcp
