#include "agents/registry.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agents/agent_env.h"
#include "agents/builtin_specs.h"
#include "agents/spec_format.h"
#include "agents/spec_parser.h"
#include "common/exit_codes.h"

namespace airlock::agents {
namespace {

TEST(BuiltinSpecs, EveryFileParses) {
  ASSERT_EQ(builtinSpecFiles().size(), 11u);
  for (const auto& file : builtinSpecFiles()) {
    auto spec = parseAgentSpec(file.text, file.fileName);
    EXPECT_TRUE(spec) << file.fileName << ": " << spec.error().message;
  }
}

TEST(BuiltinSpecs, FormatRoundTrips) {
  auto registry = AgentRegistry::builtin();
  ASSERT_TRUE(registry) << registry.error().message;
  for (const auto& spec : registry->all()) {
    std::string text = formatAgentSpec(spec);
    auto again = parseAgentSpec(text, spec.name + ".yaml");
    ASSERT_TRUE(again) << again.error().message << "\n" << text;
    EXPECT_EQ(*again, spec) << text;
  }
}

TEST(Registry, BuiltinNames) {
  auto registry = AgentRegistry::builtin();
  ASSERT_TRUE(registry) << registry.error().message;
  EXPECT_EQ(registry->names(), (std::vector<std::string>{"claude-code", "codex", "copilot", "crush", "gemini", "grok",
                                                         "hermes", "opencode", "pi", "qwen-code", "shell"}));
}

TEST(Registry, BuiltinFacts) {
  auto registry = AgentRegistry::builtin();
  ASSERT_TRUE(registry) << registry.error().message;
  auto claude = registry->find("claude-code");
  ASSERT_TRUE(claude);
  EXPECT_EQ(claude->image.programPackage(), "@anthropic-ai/claude-code-linux-x64");
  EXPECT_EQ(claude->env.at("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), "1");
  EXPECT_TRUE(forwardsEnv(*claude, "ANTHROPIC_BASE_URL"));
  auto codex = registry->find("codex");
  ASSERT_TRUE(codex);
  EXPECT_EQ(codex->image.programVersion(), codex->image.version + "-linux-x64");
  auto codexFiles = expandFiles(codex->homeFiles, {{"OPENAI_BASE_URL", "http://10.0.2.2:1234/v1"}});
  EXPECT_NE(codexFiles.at(".codex/config.toml").find("base_url = \"http://10.0.2.2:1234/v1\""), std::string::npos);
  EXPECT_NE(codexFiles.at(".codex/config.toml").find("wire_api = \"responses\""), std::string::npos);
  auto gemini = registry->find("gemini");
  ASSERT_TRUE(gemini);
  EXPECT_TRUE(gemini->image.node);
  EXPECT_NE(gemini->homeFiles.at(".gemini/settings.json").find("gemini-api-key"), std::string::npos);
  auto opencode = registry->find("opencode");
  ASSERT_TRUE(opencode);
  auto ocFiles = expandFiles(opencode->homeFiles, {});
  EXPECT_NE(ocFiles.at(".config/opencode/opencode.json").find("\"baseURL\": \"https://api.openai.com/v1\""),
            std::string::npos);
  // Grok: the API key is forwarded by value, the user's settings without it.
  auto grok = registry->find("grok");
  ASSERT_TRUE(grok);
  EXPECT_TRUE(grok->image.node);
  EXPECT_TRUE(forwardsEnv(*grok, "GROK_API_KEY"));
  EXPECT_TRUE(forwardsEnv(*grok, "GROK_BASE_URL"));
  ASSERT_EQ(grok->settings.size(), 1u);
  EXPECT_EQ(grok->settings[0].keys, (std::vector<std::string>{"defaultModel", "models"})) << "apiKey must stay out";
  // Qwen Code: the OpenAI provider, no prompt before acting, no telemetry.
  auto qwen = registry->find("qwen-code");
  ASSERT_TRUE(qwen);
  EXPECT_EQ(qwen->command, (std::vector<std::string>{"qwen"}));
  EXPECT_EQ(qwen->defaultArgs, (std::vector<std::string>{"--yolo"}));
  EXPECT_TRUE(forwardsEnv(*qwen, "OPENAI_BASE_URL"));
  auto qwenSettings = nlohmann::json::parse(expandFiles(qwen->homeFiles, {}).at(".qwen/settings.json"));
  EXPECT_EQ(qwenSettings["security"]["auth"]["selectedType"], "openai");
  EXPECT_EQ(qwenSettings["telemetry"]["enabled"], false);
  // The shell: the base image alone, bash as a login shell, nothing forwarded.
  auto shell = registry->find("shell");
  ASSERT_TRUE(shell);
  EXPECT_TRUE(shell->image.baseOnly());
  EXPECT_EQ(shell->command, (std::vector<std::string>{"bash", "-l"}));
  EXPECT_TRUE(shell->envForward.empty());
  for (const auto& spec : registry->all()) {
    EXPECT_EQ(spec.cpus, 2) << spec.name;
    EXPECT_EQ(spec.memoryMib, 4096) << spec.name;
    EXPECT_TRUE(spec.name == "shell" || !spec.egress.modelHosts.empty()) << spec.name;
  }
}

TEST(Registry, UnknownNameListsKnownNames) {
  auto registry = AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  auto missing = registry->find("cluade");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, exit_code::kUsage);
  EXPECT_EQ(missing.error().message,
            "unknown agent 'cluade'; known agents: claude-code, codex, copilot, crush, gemini, grok, hermes, opencode, "
            "pi, qwen-code, shell");
}

TEST(Registry, AddRejectsDuplicates) {
  AgentRegistry registry;
  AgentSpec spec;
  spec.name = "b";
  ASSERT_TRUE(registry.add(spec));
  spec.name = "a";
  ASSERT_TRUE(registry.add(spec));
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(registry.add(spec));
}

}  // namespace
}  // namespace airlock::agents
