// What a run does with the user's MCP servers (cli/mcp_plan.h): image
// packages, the agent's MCP file, its arguments, and what is refused.

#include "cli/mcp_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "agents/registry.h"
#include "common/exit_codes.h"
#include "config/effective.h"
#include "mcp/host_proxy.h"
#include "secrets/credential_broker.h"
#include "secrets/session_tls.h"

namespace airlock::cli {
namespace {

config::Settings withServers(std::vector<agents::McpServer> servers) {
  config::Settings settings;
  for (auto& s : servers) settings.mcpServers.push_back({std::move(s), config::Layer::kUser});
  return settings;
}

const agents::McpServer kFs{.name = "fs", .npmPackage = "@m/fs", .npmVersion = "1.0.0", .args = {"/workspace"}};
const agents::McpServer kTool{.name = "tool", .command = {"/usr/bin/tool"}};

agents::AgentSpec builtin(const std::string& name) {
  auto registry = agents::AgentRegistry::builtin();
  return *registry->find(name);
}

session::ImageSource agentImage() { return {session::ImageSource::Kind::kAgentBuild, "claude-code"}; }

TEST(PlanMcpServers, ClaudeCodeGetsItsFileAndItsFlag) {
  auto spec = builtin("claude-code");
  std::vector<session::HomeFile> home{{".gitconfig", "[user]\n"}};
  auto plan = planMcpServers(withServers({kFs, kTool}), agentImage(), spec, home);
  ASSERT_TRUE(plan) << plan.error().message;
  // One argument: --mcp-config takes several values and would swallow a prompt after it.
  EXPECT_EQ(plan->args, std::vector<std::string>{"--mcp-config=/home/agent/.airlock/mcp.json"});
  ASSERT_EQ(home.size(), 2u);
  EXPECT_EQ(home[1].path, ".airlock/mcp.json");
  auto doc = nlohmann::json::parse(home[1].content);
  EXPECT_EQ(doc["mcpServers"]["fs"]["command"], "/usr/local/bin/mcp-fs");
  EXPECT_EQ(doc["mcpServers"]["tool"]["command"], "/usr/bin/tool");
  EXPECT_NE(plan->line.find("fs (@m/fs@1.0.0), tool"), std::string::npos) << plan->line;
  EXPECT_TRUE(plan->notice.empty());
}

// Each built-in agent that takes MCP servers gets them in its own file and
// format, merged into airlock's own home file of that path (which keeps its
// provider settings).
TEST(PlanMcpServers, EachAgentGetsThemInItsOwnFormat) {
  struct Case {
    const char* agent;
    const char* file;
    const char* mustHave;
  };
  for (const Case& c : {Case{"gemini", ".gemini/settings.json", "\"mcpServers\""},
                        Case{"qwen-code", ".qwen/settings.json", "\"mcpServers\""},
                        Case{"codex", ".codex/config.toml", "[mcp_servers.fs]\ncommand = \"/usr/local/bin/mcp-fs\""},
                        Case{"opencode", ".config/opencode/opencode.json", "\"type\": \"local\""}}) {
    auto spec = builtin(c.agent);
    ASSERT_EQ(spec.mcp.file, c.file) << c.agent;
    std::vector<session::HomeFile> home;
    for (const auto& [path, content] : spec.homeFiles) home.push_back({path, content});
    const size_t before = home.size();
    auto plan = planMcpServers(withServers({kFs}), agentImage(), spec, home);
    ASSERT_TRUE(plan) << c.agent << ": " << plan.error().message;
    EXPECT_EQ(home.size(), before) << c.agent << ": merged into airlock's own file";
    auto file = std::find_if(home.begin(), home.end(), [&](const auto& f) { return f.path == c.file; });
    ASSERT_NE(file, home.end());
    EXPECT_NE(file->content.find(c.mustHave), std::string::npos) << c.agent << ":\n" << file->content;
    EXPECT_NE(file->content.find("/workspace"), std::string::npos);
  }
}

TEST(ApplyMcpPackages, NpmServersGoIntoTheImageOfAnAgentThatTakesThem) {
  auto claude = builtin("claude-code");
  config::applyMcpPackages(claude, withServers({kFs, kTool}));
  EXPECT_EQ(claude.image.mcpPackages, (std::map<std::string, std::string>{{"fs", "@m/fs@1.0.0"}}));
  auto grok = builtin("grok");
  config::applyMcpPackages(grok, withServers({kFs}));
  EXPECT_TRUE(grok.image.mcpPackages.empty()) << "grok takes none: its image stays the same";
}

TEST(PlanMcpServers, NoServersChangeNothing) {
  auto spec = builtin("claude-code");
  const auto before = spec;
  std::vector<session::HomeFile> home;
  auto plan = planMcpServers(config::Settings{}, agentImage(), spec, home);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->args.empty());
  EXPECT_TRUE(plan->line.empty());
  EXPECT_TRUE(home.empty());
  EXPECT_EQ(spec, before);
}

TEST(PlanMcpServers, AnAgentWithoutAnMcpFileIsToldNotGiven) {
  auto spec = builtin("grok");
  ASSERT_TRUE(spec.mcp.file.empty());
  std::vector<session::HomeFile> home;
  auto plan = planMcpServers(withServers({kFs}), agentImage(), spec, home);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->args.empty());
  EXPECT_NE(plan->notice.find("grok takes no MCP servers from airlock; not given: fs"), std::string::npos)
      << plan->notice;
}

TEST(PlanMcpServers, AnNpmServerNeedsTheAgentsOwnImage) {
  auto spec = builtin("claude-code");
  std::vector<session::HomeFile> home;
  auto plan = planMcpServers(withServers({kFs}), {session::ImageSource::Kind::kReference, "registry.example/img:1"},
                             spec, home);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, exit_code::kUsage);
  EXPECT_NE(plan.error().message.find("--no-mcp"), std::string::npos) << plan.error().message;
  // A server from the image itself is fine there.
  auto own = planMcpServers(withServers({kTool}), {session::ImageSource::Kind::kReference, "registry.example/img:1"},
                            spec, home);
  EXPECT_TRUE(own) << own.error().message;
}

}  // namespace
}  // namespace airlock::cli

namespace airlock::cli {
namespace {

// `host: true` (issue 20): the agent's file points at the proxy on the
// gateway; the run learns which servers to start; another image is fine
// (nothing goes into it); Qwen Code gets its own key.
TEST(PlanMcpServers, AHostServerIsGivenAsTheProxysEndpoint) {
  agents::McpServer notes{.name = "notes", .command = {"notes-mcp"}, .host = true, .tools = {"search", "read"}};
  std::vector<session::HomeFile> home;
  auto plan = planMcpServers(withServers({kTool, notes}), {session::ImageSource::Kind::kReference, "debian:12"},
                             builtin("claude-code"), home);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->hostServers.size(), 1u);
  EXPECT_EQ(plan->hostServers[0].name, "notes");
  auto doc = nlohmann::json::parse(home.at(0).content);
  EXPECT_EQ(doc["mcpServers"]["notes"]["url"], "http://10.0.2.2:4183/mcp/notes");
  EXPECT_EQ(
      plan->line,
      "MCP servers in the VM: tool; MCP servers through airlock's proxy: notes (on this host; tools: search, read)");
  std::vector<session::HomeFile> qwenHome;
  ASSERT_TRUE(planMcpServers(withServers({notes}), agentImage(), builtin("qwen-code"), qwenHome));
  EXPECT_EQ(nlohmann::json::parse(qwenHome.at(0).content)["mcpServers"]["notes"]["httpUrl"],
            "http://10.0.2.2:4183/mcp/notes");
  // An agent without an MCP client starts none of them.
  std::vector<session::HomeFile> none;
  auto grok = planMcpServers(withServers({notes}), agentImage(), builtin("grok"), none);
  ASSERT_TRUE(grok);
  EXPECT_TRUE(grok->hostServers.empty());
  EXPECT_FALSE(grok->notice.empty());
}

// Each host service the guest reaches at the gateway has a port of its own
// (the Copilot/Codex broker's HTTPS side and the git broker once shared 4181:
// one of them silently replaced the other).
TEST(GatewayPorts, AreDistinct) {
  const std::set<uint16_t> ports = {secrets::kBrokerPort, secrets::kGitBrokerPort, secrets::kBrokerTlsPort,
                                    mcp::kMcpProxyPort};
  EXPECT_EQ(ports.size(), 4u);
}

}  // namespace
}  // namespace airlock::cli
