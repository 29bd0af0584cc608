#include "agents/agent_env.h"

#include <gtest/gtest.h>

namespace airlock::agents {
namespace {

TEST(ExpandTemplate, PlainTextUnchanged) {
  EXPECT_EQ(expandTemplate("no refs, $HOME, $ alone, {env:X}", {}), "no refs, $HOME, $ alone, {env:X}");
}

TEST(ExpandTemplate, SetAndUnsetVariables) {
  EnvMap env = {{"URL", "http://10.0.2.2:8080"}, {"EMPTY", ""}};
  EXPECT_EQ(expandTemplate("base=${URL}/v1", env), "base=http://10.0.2.2:8080/v1");
  EXPECT_EQ(expandTemplate("[${MISSING}]", env), "[]");
  EXPECT_EQ(expandTemplate("[${EMPTY}]", env), "[]");
}

TEST(ExpandTemplate, Defaults) {
  EnvMap env = {{"URL", "http://mock"}, {"EMPTY", ""}};
  EXPECT_EQ(expandTemplate("${URL:-https://api.openai.com/v1}", env), "http://mock");
  EXPECT_EQ(expandTemplate("${MISSING:-https://api.openai.com/v1}", env), "https://api.openai.com/v1");
  EXPECT_EQ(expandTemplate("${EMPTY:-fallback}", env), "fallback");
  EXPECT_EQ(expandTemplate("${MISSING:-}", env), "");
  EXPECT_EQ(expandTemplate("a ${MISSING:-x:-y} b ${URL}", env), "a x:-y b http://mock");
}

TEST(ExpandTemplate, MalformedReferencesKept) {
  EXPECT_EQ(expandTemplate("${1BAD} ${A", {{"A", "1"}}), "${1BAD} ${A");
}

// ${NAME: -N}: the last N bytes (Claude Code records the last 20
// characters of an API key it was told to use).
TEST(ExpandTemplate, Tails) {
  EXPECT_EQ(expandTemplate("[${K: -4}]", {{"K", "sk-ant-abcdef"}}), "[cdef]");
  EXPECT_EQ(expandTemplate("[${K: -40}]", {{"K", "short"}}), "[short]");
  EXPECT_EQ(expandTemplate("[${K: -4}]", {}), "[]");
  EXPECT_TRUE(checkTemplate("${K: -20}"));
  EXPECT_FALSE(checkTemplate("${K: -}"));
  EXPECT_FALSE(checkTemplate("${K: -2x}"));
}

TEST(CheckTemplate, ReportsFaults) {
  EXPECT_TRUE(checkTemplate("${A} ${B:-c} $D {x}"));
  auto unterminated = checkTemplate("abc ${A");
  ASSERT_FALSE(unterminated);
  EXPECT_EQ(unterminated.error().message, "unterminated ${ at offset 4");
  auto bad = checkTemplate("${A B}");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad variable name 'A B'"), std::string::npos);
  EXPECT_FALSE(checkTemplate("${}"));
  EXPECT_FALSE(checkTemplate("${:-x}"));
}

TEST(ExpandHomeFiles, ExpandsEveryFileNotPaths) {
  AgentSpec spec;
  spec.homeFiles = {{".codex/config.toml", "base_url = \"${OPENAI_BASE_URL:-https://api.openai.com/v1}\"\n"},
                    {".claude.json", "{}"}};
  auto files = expandFiles(spec.homeFiles, {{"OPENAI_BASE_URL", "http://10.0.2.2:9000/v1"}});
  EXPECT_EQ(files.at(".codex/config.toml"), "base_url = \"http://10.0.2.2:9000/v1\"\n");
  EXPECT_EQ(files.at(".claude.json"), "{}");
  EXPECT_EQ(expandFiles(spec.homeFiles, {}).at(".codex/config.toml"), "base_url = \"https://api.openai.com/v1\"\n");
}

TEST(ForwardedEnv, NamesAndPrefixes) {
  AgentSpec spec;
  spec.envForward = {"ANTHROPIC_API_KEY", "CLAUDE_*"};
  EXPECT_TRUE(forwardsEnv(spec, "ANTHROPIC_API_KEY"));
  EXPECT_FALSE(forwardsEnv(spec, "ANTHROPIC_API_KEY2"));
  EXPECT_TRUE(forwardsEnv(spec, "CLAUDE_CODE_X"));
  EXPECT_TRUE(forwardsEnv(spec, "CLAUDE_"));
  EXPECT_FALSE(forwardsEnv(spec, "CLAUDE"));
  EnvMap host = {{"HOME", "/root"}, {"ANTHROPIC_API_KEY", "k"}, {"CLAUDE_X", "1"}, {"PATH", "/bin"}};
  EXPECT_EQ(forwardedEnv(spec, host), (EnvMap{{"ANTHROPIC_API_KEY", "k"}, {"CLAUDE_X", "1"}}));
}

}  // namespace
}  // namespace airlock::agents
