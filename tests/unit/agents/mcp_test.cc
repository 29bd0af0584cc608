// MCP servers as data: names, npm pins, and the "mcpServers" JSON the
// agents read (agents/mcp.h).

#include "agents/mcp.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace airlock::agents {
namespace {

TEST(McpServerName, LettersDigitsDashAndUnderscoreUpTo32) {
  EXPECT_TRUE(isMcpServerName("fs"));
  EXPECT_TRUE(isMcpServerName("my_server-2"));
  EXPECT_TRUE(isMcpServerName(std::string(32, 'a')));
  EXPECT_FALSE(isMcpServerName(""));
  EXPECT_FALSE(isMcpServerName(std::string(33, 'a')));
  EXPECT_FALSE(isMcpServerName("-fs"));
  EXPECT_FALSE(isMcpServerName("a b"));
  EXPECT_FALSE(isMcpServerName("../x"));
  EXPECT_FALSE(isMcpServerName("a\x1b[2J"));
}

TEST(NpmPin, ExactVersionsOfScopedAndPlainPackages) {
  auto scoped = parseNpmPin("@modelcontextprotocol/server-filesystem@2026.8.31");
  ASSERT_TRUE(scoped) << scoped.error().message;
  EXPECT_EQ(scoped->first, "@modelcontextprotocol/server-filesystem");
  EXPECT_EQ(scoped->second, "2026.8.31");
  EXPECT_TRUE(parseNpmPin("mcp-tool@0.10.0"));
  EXPECT_TRUE(parseNpmPin("mcp-tool@10.0.100"));
  EXPECT_TRUE(parseNpmPin("mcp-tool@1.0.0-rc-1.0a+001"));
  auto plain = parseNpmPin("mcp-tool@1.0.0-beta.2+build.7");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->first, "mcp-tool");
  EXPECT_EQ(plain->second, "1.0.0-beta.2+build.7");
}

TEST(NpmPin, RangesTagsUrlsAndOddNamesAreRefused) {
  for (const char* bad :
       {"mcp-tool", "mcp-tool@", "@scope/x", "mcp-tool@latest", "mcp-tool@^1.0.0", "mcp-tool@~1.0.0", "mcp-tool@1.0",
        "mcp-tool@1.0.0.0", "mcp-tool@1..0", "mcp-tool@>=1.0.0", "Mcp-Tool@1.0.0", "@/x@1.0.0", "@scope/@1.0.0",
        "../x@1.0.0", "git+https://x/y@1.0.0", "x y@1.0.0", "mcp-tool@1.0.0 --foo", "@1.0.0"}) {
    auto pin = parseNpmPin(bad);
    EXPECT_FALSE(pin) << bad;
    if (!pin) {
      EXPECT_NE(pin.error().message.find("PACKAGE@VERSION"), std::string::npos);
    }
  }
}

TEST(McpServerArgv, AnNpmServerRunsItsWrapperACommandServerItsProgram) {
  McpServer npm{.name = "fs", .npmPackage = "@m/fs", .npmVersion = "1.0.0", .args = {"/workspace"}};
  EXPECT_EQ(mcpServerArgv(npm), (std::vector<std::string>{"/usr/local/bin/mcp-fs", "/workspace"}));
  McpServer cmd{.name = "t", .command = {"/usr/bin/tool", "--stdio"}, .args = {"-v"}};
  EXPECT_EQ(mcpServerArgv(cmd), (std::vector<std::string>{"/usr/bin/tool", "--stdio", "-v"}));
}

TEST(WithMcpServers, WritesStdioEntriesAndKeepsTheRestOfTheFile) {
  McpServer fs{.name = "fs", .npmPackage = "@m/fs", .npmVersion = "1.0.0", .args = {"/workspace"}};
  McpServer tool{.name = "tool", .command = {"/usr/bin/tool"}, .env = {{"LEVEL", "2"}}};
  auto fresh = withMcpServers("", {fs});
  ASSERT_TRUE(fresh) << fresh.error().message;
  auto doc = nlohmann::json::parse(*fresh);
  EXPECT_EQ(doc["mcpServers"]["fs"]["command"], "/usr/local/bin/mcp-fs");
  EXPECT_EQ(doc["mcpServers"]["fs"]["args"], nlohmann::json::array({"/workspace"}));
  EXPECT_FALSE(doc["mcpServers"]["fs"].contains("env"));

  auto merged = withMcpServers(R"({"general": {"disableAutoUpdate": true}, "mcpServers": {"fs": {"command": "old"},
                                   "mine": {"command": "/x"}}})",
                               {fs, tool});
  ASSERT_TRUE(merged) << merged.error().message;
  doc = nlohmann::json::parse(*merged);
  EXPECT_EQ(doc["general"]["disableAutoUpdate"], true);
  EXPECT_EQ(doc["mcpServers"]["fs"]["command"], "/usr/local/bin/mcp-fs");
  EXPECT_EQ(doc["mcpServers"]["mine"]["command"], "/x");
  EXPECT_EQ(doc["mcpServers"]["tool"]["env"]["LEVEL"], "2");
  EXPECT_EQ(doc["mcpServers"]["tool"]["args"], nlohmann::json::array());
}

TEST(WithMcpServers, CodexTablesAreAppendedWithTomlEscapes) {
  McpServer odd{.name = "odd", .command = {"/usr/bin/t\"ool"}, .args = {"a\\b", "line\nbreak"}, .env = {{"K", "v\"1"}}};
  auto toml = withMcpServers("model = \"x\"\n\n[projects.\"/workspace\"]\ntrust_level = \"trusted\"", {odd},
                             McpFormat::kCodexToml);
  ASSERT_TRUE(toml) << toml.error().message;
  EXPECT_EQ(*toml,
            "model = \"x\"\n\n[projects.\"/workspace\"]\ntrust_level = \"trusted\"\n"
            "\n[mcp_servers.odd]\ncommand = \"/usr/bin/t\\\"ool\"\nargs = [\"a\\\\b\", \"line\\u000Abreak\"]\n"
            "startup_timeout_sec = 60\nenv = { K = \"v\\\"1\" }\n");
  EXPECT_FALSE(withMcpServers(*toml, {odd}, McpFormat::kCodexToml)) << "a second table of one name";
}

TEST(WithMcpServers, OpenCodeGetsLocalServersUnderMcp) {
  McpServer fs{.name = "fs", .npmPackage = "@m/fs", .npmVersion = "1.0.0", .args = {"/workspace"}, .env = {{"A", "1"}}};
  auto json = withMcpServers(R"({"model": "airlock/x"})", {fs}, McpFormat::kOpenCodeJson);
  ASSERT_TRUE(json) << json.error().message;
  auto doc = nlohmann::json::parse(*json);
  EXPECT_EQ(doc["model"], "airlock/x");
  EXPECT_EQ(doc["mcp"]["fs"]["type"], "local");
  EXPECT_EQ(doc["mcp"]["fs"]["command"], nlohmann::json::array({"/usr/local/bin/mcp-fs", "/workspace"}));
  EXPECT_EQ(doc["mcp"]["fs"]["environment"]["A"], "1");
  EXPECT_EQ(doc["mcp"]["fs"]["enabled"], true);
}

TEST(McpFormat, NamesRoundTrip) {
  for (auto f :
       {McpFormat::kMcpServersJson, McpFormat::kCodexToml, McpFormat::kOpenCodeJson, McpFormat::kQwenSettingsJson})
    EXPECT_EQ(parseMcpFormat(mcpFormatName(f)), f);
  EXPECT_FALSE(parseMcpFormat("yaml"));
}

// A host server (`host: true`) is a streamable-HTTP server at the proxy, in
// each agent's own words (measured on the pinned versions: Qwen Code reads a
// "url" as SSE whatever "type" says; Codex refuses stdio keys beside "url").
TEST(WithMcpServers, AHostServerIsAnHttpEndpointInEachFormat) {
  McpServer notes{.name = "notes", .command = {"notes-mcp"}, .env = {{"K", "v"}}, .host = true, .tools = {"search"}};
  const std::map<std::string, std::string> at = {{"notes", "http://10.0.2.2:4183/mcp/notes"}};
  auto json = withMcpServers("", {notes}, McpFormat::kMcpServersJson, at);
  ASSERT_TRUE(json) << json.error().message;
  EXPECT_EQ(nlohmann::json::parse(*json)["mcpServers"]["notes"],
            nlohmann::json({{"type", "http"}, {"url", "http://10.0.2.2:4183/mcp/notes"}}))
      << "no env, command or tools enter the VM";
  auto qwen = withMcpServers("", {notes}, McpFormat::kQwenSettingsJson, at);
  ASSERT_TRUE(qwen);
  EXPECT_EQ(nlohmann::json::parse(*qwen)["mcpServers"]["notes"],
            nlohmann::json({{"httpUrl", "http://10.0.2.2:4183/mcp/notes"}}));
  auto openCode = withMcpServers("", {notes}, McpFormat::kOpenCodeJson, at);
  ASSERT_TRUE(openCode);
  EXPECT_EQ(nlohmann::json::parse(*openCode)["mcp"]["notes"],
            nlohmann::json(
                {{"type", "remote"}, {"url", "http://10.0.2.2:4183/mcp/notes"}, {"enabled", true}, {"oauth", false}}));
  auto codex = withMcpServers("", {notes}, McpFormat::kCodexToml, at);
  ASSERT_TRUE(codex);
  EXPECT_EQ(*codex, "\n[mcp_servers.notes]\nurl = \"http://10.0.2.2:4183/mcp/notes\"\n");
  EXPECT_FALSE(withMcpServers("", {notes}, McpFormat::kMcpServersJson)) << "no endpoint";
}

TEST(RemoteMcpUrl, HttpsAnywhereHttpOnlyToThisMachine) {
  for (const char* ok : {"https://mcp.example.com/mcp", "https://mcp.example.com:8443/v1/mcp?x=1",
                         "http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/mcp"})
    EXPECT_TRUE(isRemoteMcpUrl(ok)) << ok;
  for (const char* bad : {"http://mcp.example.com/mcp", "http://127.0.0.1.evil.example/mcp",
                          "http://localhost.evil.example/", "https://user:pw@mcp.example.com/", "ftp://x/", "https://",
                          "https://x.example/a b", "https://x.example/#frag", "mcp.example.com"})
    EXPECT_FALSE(isRemoteMcpUrl(bad)) << bad;
}

TEST(WithMcpServers, AFileThatIsNotAJsonObjectIsAnError) {
  McpServer tool{.name = "tool", .command = {"/usr/bin/tool"}};
  EXPECT_FALSE(withMcpServers("[1]", {tool}));
  EXPECT_FALSE(withMcpServers("{oops", {tool}));
}

}  // namespace
}  // namespace airlock::agents
