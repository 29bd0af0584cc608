// What a run does with the user's MCP servers (cli/mcp_plan.h): image
// packages, the agent's MCP file, its arguments, and what is refused.

#include "cli/mcp_plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agents/registry.h"
#include "common/exit_codes.h"

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

TEST(PlanMcpServers, ClaudeCodeGetsItsFileItsFlagAndTheNpmPackageInItsImage) {
  auto spec = builtin("claude-code");
  std::vector<session::HomeFile> home{{".gitconfig", "[user]\n"}};
  auto plan = planMcpServers(withServers({kFs, kTool}), agentImage(), spec, home);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->args, (std::vector<std::string>{"--mcp-config", "/home/agent/.airlock/mcp.json"}));
  EXPECT_EQ(spec.image.mcpPackages, (std::map<std::string, std::string>{{"fs", "@m/fs@1.0.0"}}));
  ASSERT_EQ(home.size(), 2u);
  EXPECT_EQ(home[1].path, ".airlock/mcp.json");
  auto doc = nlohmann::json::parse(home[1].content);
  EXPECT_EQ(doc["mcpServers"]["fs"]["command"], "/usr/local/bin/mcp-fs");
  EXPECT_EQ(doc["mcpServers"]["tool"]["command"], "/usr/bin/tool");
  EXPECT_NE(plan->line.find("fs (@m/fs@1.0.0), tool"), std::string::npos) << plan->line;
  EXPECT_TRUE(plan->notice.empty());
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
  auto spec = builtin("codex");
  ASSERT_TRUE(spec.mcp.file.empty());
  std::vector<session::HomeFile> home;
  auto plan = planMcpServers(withServers({kFs}), agentImage(), spec, home);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->args.empty());
  EXPECT_TRUE(spec.image.mcpPackages.empty());
  EXPECT_NE(plan->notice.find("codex takes no MCP servers from airlock; not given: fs"), std::string::npos)
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
