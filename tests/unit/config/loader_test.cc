// Strict loading of config files: types, unknown keys, size cap, symlinks.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "config/effective.h"
#include "config/loader.h"
#include "config/settings.h"

namespace airlock::config {
namespace {

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("/tmp", "airlock-config-");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_->path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::optional<TempDir> dir_;
};

// A user's own agent named like a built-in that came later (grok, shell)
// is the user's: every run still works, and that name runs theirs. Two of
// the user's own of one name are an error naming the file.
TEST(CustomAgents, TheUsersOwnAgentTakesTheNameOfABuiltIn) {
  auto layer = parseConfig(R"(
agents:
  shell:
    description: My shell
    image: ghcr.io/example/my-shell:1
    command: [zsh]
)", "config.yaml");
  ASSERT_TRUE(layer) << layer.error().message;
  auto registry = registryWithCustomAgents(*layer, "config.yaml");
  ASSERT_TRUE(registry) << registry.error().message;
  auto shell = registry->find("shell");
  ASSERT_TRUE(shell);
  EXPECT_EQ(shell->description, "My shell");
  EXPECT_EQ(shell->command, std::vector<std::string>{"zsh"});
  EXPECT_TRUE(registry->find("claude-code"));
  EXPECT_EQ(registry->names().size(), agents::AgentRegistry::builtin()->names().size());
  agents::AgentRegistry twice;
  ASSERT_TRUE(twice.add(*shell));
  EXPECT_FALSE(twice.add(*shell));
}

TEST(ParseConfig, ReadsEveryKey) {
  auto layer = parseConfig(R"(
vcpus: 4
memory_mib: 2048
egress_profile: locked
allow_hosts: [example.com, "git.example.com:8443"]
remove_hosts: [pypi.org]
host_ports: [11434, 8080]
env_forward: [OPENAI_API_KEY, "MYTOOL_*"]
exclude: ["*.sqlite", data/]
workspace_mode: direct
review: auto
image: /srv/rootfs
direct_mode_acknowledged: true
settings_import: false
agents:
  my-agent:
    description: Mine
    image: {npm_package: my-agent, version: "1.0.0", binary: bin/my-agent, install_as: my-agent, node: true}
    command: [my-agent]
mcp_servers:
  fs: {npm: "@modelcontextprotocol/server-filesystem@2026.8.31", args: [/workspace]}
  tool: {command: [/usr/bin/tool, --stdio], env: {LEVEL: "2"}}
remove_mcp_servers: [old]
)",
                           "config.yaml");
  ASSERT_TRUE(layer) << layer.error().message;
  ASSERT_EQ(layer->mcpServers.size(), 2u);
  EXPECT_EQ(layer->mcpServers[0].name, "fs");
  EXPECT_EQ(layer->mcpServers[0].npmPackage, "@modelcontextprotocol/server-filesystem");
  EXPECT_EQ(layer->mcpServers[0].npmVersion, "2026.8.31");
  EXPECT_EQ(layer->mcpServers[0].args, std::vector<std::string>{"/workspace"});
  EXPECT_EQ(layer->mcpServers[1].command, (std::vector<std::string>{"/usr/bin/tool", "--stdio"}));
  EXPECT_EQ(layer->mcpServers[1].env, (std::map<std::string, std::string>{{"LEVEL", "2"}}));
  EXPECT_EQ(layer->removeMcpServers, std::vector<std::string>{"old"});
  EXPECT_EQ(layer->cpus, 4u);
  EXPECT_EQ(layer->memoryMib, 2048u);
  EXPECT_EQ(layer->egressProfile, EgressProfile::kLocked);
  EXPECT_EQ(layer->allowHosts, (std::vector<std::string>{"example.com", "git.example.com:8443"}));
  EXPECT_EQ(layer->removeHosts, std::vector<std::string>{"pypi.org"});
  EXPECT_EQ(layer->hostPorts, (std::vector<unsigned>{11434, 8080}));
  EXPECT_EQ(layer->envForward, (std::vector<std::string>{"OPENAI_API_KEY", "MYTOOL_*"}));
  EXPECT_EQ(layer->excludes, (std::vector<std::string>{"*.sqlite", "data/"}));
  EXPECT_EQ(layer->workspaceMode, WorkspaceMode::kDirect);
  EXPECT_EQ(layer->review, ReviewPolicy::kAuto);
  EXPECT_EQ(layer->image, "/srv/rootfs");
  EXPECT_EQ(layer->directModeAcknowledged, true);
  EXPECT_EQ(layer->settingsImport, false);
  ASSERT_EQ(layer->agents.size(), 1u);
  EXPECT_EQ(layer->agents[0].name, "my-agent");
  EXPECT_EQ(layer->agents[0].command, std::vector<std::string>{"my-agent"});
}

TEST_F(LoaderTest, McpNamingAServerTheRunDoesNotHaveIsAUsageError) {
  const std::string user = write("config.yaml", "mcp_servers: {fs: {command: [/usr/bin/fs-mcp]}}\n");
  ConfigLayer flags;
  flags.onlyMcpServers = std::vector<std::string>{"git"};
  auto effective = loadEffectiveConfig(user, "claude-code", dir_->path(), flags);
  ASSERT_FALSE(effective);
  EXPECT_EQ(effective.error().code, exit_code::kUsage);
  EXPECT_NE(effective.error().message.find("--mcp git: no MCP server of that name"), std::string::npos)
      << effective.error().message;
  flags.onlyMcpServers = std::vector<std::string>{"fs"};
  auto kept = loadEffectiveConfig(user, "claude-code", dir_->path(), flags);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->resolved.settings.mcpServers.size(), 1u);
}

// A repo config's servers are ignored whatever they say (merge.h), so only
// their names are read: a server kind airlock does not have yet is no error.
TEST(ParseConfig, ARepoConfigsMcpServersAreReadByNameOnly) {
  auto repo = parseConfig("mcp_servers: {remote: {url: \"https://mcp.example.com\"}, \"odd name\": 1}\n", "r", true);
  ASSERT_TRUE(repo) << repo.error().message;
  ASSERT_EQ(repo->mcpServers.size(), 2u);
  EXPECT_EQ(repo->mcpServers[0].name, "remote");
  EXPECT_FALSE(parseConfig("mcp_servers: {remote: {url: \"https://mcp.example.com\"}}\n", "u"));
}

// `host: true` (issue 20): a program on the host, with the tools the agent
// may call; an allowlist means nothing for a server the agent starts itself.
TEST(ParseConfig, AHostMcpServerNeedsACommandAndItsAllowedTools) {
  auto ok =
      parseConfig("mcp_servers: {notes: {host: true, command: [notes-mcp, --stdio], tools: [search, read]}}\n", "u");
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(ok->mcpServers.size(), 1u);
  EXPECT_TRUE(ok->mcpServers[0].host);
  EXPECT_EQ(ok->mcpServers[0].tools, (std::vector<std::string>{"search", "read"}));
  EXPECT_EQ(ok->mcpServers[0].command.front(), "notes-mcp") << "a name on the host's PATH";
  struct Case {
    const char* yaml;
    const char* message;
  };
  for (const Case& c : {
           Case{"{host: true, command: [notes-mcp]}", "list the tools the agent may call"},
           Case{"{host: true, command: [notes-mcp], tools: []}", "list the tools the agent may call"},
           Case{"{host: true, npm: \"@m/notes@1.0.0\", tools: [a]}", "a host server is command"},
           Case{"{host: true, command: [bin/notes], tools: [a]}", "an absolute path or a name on your PATH"},
           Case{"{command: [/usr/bin/notes], tools: [a]}", "'tools' (the allowlist) needs host: true"},
           Case{"{host: yes-please, command: [/usr/bin/notes], tools: [a]}", "'host' must be true or false"},
           Case{"{host: true, command: [/usr/bin/notes], tools: [[a]]}", "'tools' must be a list of tool names"},
       }) {
    auto layer = parseConfig(std::string("mcp_servers: {notes: ") + c.yaml + "}\n", "u");
    ASSERT_FALSE(layer) << c.yaml;
    EXPECT_NE(layer.error().message.find(c.message), std::string::npos) << c.yaml << ": " << layer.error().message;
  }
}

// `url:` (issue 20): a remote server, reached by the proxy from the host
// with a token named (never given) in the config.
TEST(ParseConfig, ARemoteMcpServerNeedsAnHttpsUrlItsToolsAndATokenByName) {
  auto ok = parseConfig(
      "mcp_servers: {docs: {url: \"https://mcp.example.com/mcp\", token: \"secret:DOCS\", tools: [search]}}\n", "u");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->mcpServers[0].url, "https://mcp.example.com/mcp");
  EXPECT_EQ(ok->mcpServers[0].token, "secret:DOCS");
  EXPECT_TRUE(ok->mcpServers[0].viaProxy());
  struct Case {
    const char* yaml;
    const char* message;
  };
  for (const Case& c : {
           Case{"{url: \"http://mcp.example.com/mcp\", tools: [a]}", "url must be https://"},
           Case{"{url: \"https://mcp.example.com/mcp\"}", "list the tools the agent may call"},
           Case{"{url: \"https://x.example/mcp\", token: \"ghp_abc\", tools: [a]}", "never the token itself"},
           Case{"{command: [/usr/bin/x], token: \"env:T\"}", "'token' goes with url"},
           Case{"{url: \"https://x.example/mcp\", command: [/usr/bin/x], tools: [a]}", "exactly one of"},
           Case{"{url: \"https://x.example/mcp\", host: true, tools: [a]}", "host: true is for a command"},
           Case{"{url: \"https://x.example/mcp\", env: {A: b}, tools: [a]}", "args and env are for a command"},
       }) {
    auto layer = parseConfig(std::string("mcp_servers: {docs: ") + c.yaml + "}\n", "u");
    ASSERT_FALSE(layer) << c.yaml;
    EXPECT_NE(layer.error().message.find(c.message), std::string::npos) << c.yaml << ": " << layer.error().message;
    EXPECT_EQ(layer.error().message.find("ghp_abc"), std::string::npos) << layer.error().message;
  }
}

// A hostile repo config's own text in an error reaches the terminal escaped.
TEST(ParseConfig, AnErrorQuotingTheFileIsEscaped) {
  auto layer = parseConfig("\"\\e]0;PWNED\\a\\e[2J\": 1\n", "r", true);
  ASSERT_FALSE(layer);
  EXPECT_EQ(layer.error().message.find('\x1b'), std::string::npos) << layer.error().message;
  EXPECT_NE(layer.error().message.find("\\x1b]0;PWNED"), std::string::npos) << layer.error().message;
}

TEST(ParseConfig, EmptyAndCommentOnlyFilesAreEmptyLayers) {
  EXPECT_TRUE(parseConfig("", "c.yaml"));
  EXPECT_TRUE(parseConfig("# nothing\n", "c.yaml"));
}

TEST(ParseConfig, UnknownKeyIsAnErrorNamingKeyAndFile) {
  auto layer = parseConfig("vcpus: 2\negress_hosts: [evil.example.com]\n", "/src/app/.airlock.yaml");
  ASSERT_FALSE(layer);
  EXPECT_EQ(layer.error().code, exit_code::kUsage);
  EXPECT_NE(layer.error().message.find("/src/app/.airlock.yaml:2:"), std::string::npos) << layer.error().message;
  EXPECT_NE(layer.error().message.find("unknown key 'egress_hosts'"), std::string::npos) << layer.error().message;
}

struct BadValue {
  const char* yaml;
  const char* expect;
};

class ParseConfigBadValue : public ::testing::TestWithParam<BadValue> {};

TEST_P(ParseConfigBadValue, IsRefusedWithTheKey) {
  auto layer = parseConfig(GetParam().yaml, "c.yaml");
  ASSERT_FALSE(layer) << GetParam().yaml;
  EXPECT_NE(layer.error().message.find(GetParam().expect), std::string::npos) << layer.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Types, ParseConfigBadValue,
    ::testing::Values(
        BadValue{"vcpus: two", "'vcpus' must be a plain decimal integer"}, BadValue{"vcpus: 0", "from 1 to 64"},
        BadValue{"vcpus: 65", "from 1 to 64"}, BadValue{"memory_mib: 64", "from 128 to 65536"},
        BadValue{"vcpus: [2]", "'vcpus'"}, BadValue{"egress_profile: open", "permissive, standard"},
        BadValue{"allow_hosts: evil.example.com", "list of strings"},
        BadValue{"allow_hosts: [\"http://x\"]", "not a host name"},
        BadValue{"allow_hosts: [\"a.com:99999\"]", "not a host name"}, BadValue{"host_ports: [0]", "from 1 to 65535"},
        BadValue{"host_ports: 80", "list of port"}, BadValue{"env_forward: [\"*\"]", "not a variable name"},
        BadValue{"env_forward: [\"A-B\"]", "not a variable name"}, BadValue{"workspace_mode: live", "snapshot, direct"},
        BadValue{"review: yolo", "interactive"}, BadValue{"image: {a: b}", "'image' must be a non-empty string"},
        BadValue{"direct_mode_acknowledged: maybe", "true or false"},
        BadValue{"settings_import: [yes]", "'settings_import' must be true or false"},
        BadValue{"agents: [x]", "mapping of agent names"}, BadValue{"mcp_servers: [fs]", "mapping of server names"},
        BadValue{"mcp_servers: {\"a b\": {command: [/x]}}", "MCP server names are"},
        BadValue{"mcp_servers: {fs: {}}", "exactly one of npm"},
        BadValue{"mcp_servers: {fs: {npm: \"a@1.0.0\", command: [/x]}}", "exactly one of npm"},
        BadValue{"mcp_servers: {fs: {npm: \"@m/fs@^1.0.0\"}}", "exact version"},
        BadValue{"mcp_servers: {fs: {npm: \"@m/fs@latest\"}}", "exact version"},
        BadValue{"mcp_servers: {fs: {npm: \"@m/fs\"}}", "exact version"},
        BadValue{"mcp_servers: {fs: {npm: \"https://x/y.tgz@1.0.0\"}}", "exact version"},
        BadValue{"mcp_servers: {fs: {command: [tool]}}", "absolute path"},
        BadValue{"mcp_servers: {fs: {command: [/x], cwd: /}}", "unknown key 'cwd'"},
        BadValue{"mcp_servers: {fs: {command: [/x], env: {\"A-B\": 1}}}", "'env' must map"},
        BadValue{"remove_mcp_servers: [\"a b\"]", "not an MCP server name"},
        BadValue{"agents: {x: {description: d}}", "agent 'x'"}, BadValue{"vcpus: 2\nvcpus: 3", "duplicate key 'vcpus'"},
        BadValue{"[1, 2]", "YAML mapping"}, BadValue{"vcpus: [", "c.yaml:"},
        // Numbers are plain decimal YAML integers only.
        BadValue{"vcpus: \"2\"", "c.yaml:1:8: 'vcpus' must be a plain decimal integer from 1 to 64"},
        BadValue{"vcpus: '2'", "c.yaml:1:8: 'vcpus'"},
        BadValue{"vcpus: !!int 2", "'vcpus' must be a plain decimal integer"},
        BadValue{"memory_mib: 0x1000", "'memory_mib' must be a plain decimal integer"},
        BadValue{"memory_mib: 0o10000", "'memory_mib'"}, BadValue{"memory_mib: 04096", "'memory_mib'"},
        BadValue{"memory_mib: 4096.0", "'memory_mib'"}, BadValue{"memory_mib: 4e3", "'memory_mib'"},
        BadValue{"vcpus: +2", "'vcpus'"}, BadValue{"vcpus: 2_0", "'vcpus'"},
        BadValue{"vcpus: 99999999999999999999", "'vcpus'"},
        BadValue{"vcpus: 1\nhost_ports: [\"8080\"]", "c.yaml:2:14: 'host_ports' must be a plain decimal"},
        BadValue{"host_ports: [0x50]", "'host_ports'"}));

TEST(ParseConfig, PlainDecimalNumbersAreAccepted) {
  auto layer = parseConfig("vcpus: 64\nmemory_mib: 65536\nhost_ports: [1, 65535]\n", "c.yaml");
  ASSERT_TRUE(layer) << layer.error().message;
  EXPECT_EQ(layer->cpus, 64u);
  EXPECT_EQ(layer->memoryMib, 65536u);
  EXPECT_EQ(layer->hostPorts, (std::vector<unsigned>{1, 65535}));
}

TEST_F(LoaderTest, MissingFileIsNoLayer) {
  auto layer = loadConfigFile(dir_->path() + "/config.yaml");
  ASSERT_TRUE(layer);
  EXPECT_FALSE(*layer);
  auto repo = loadRepoConfig(dir_->path());
  ASSERT_TRUE(repo);
  EXPECT_FALSE(*repo);
}

TEST_F(LoaderTest, ReadsTheRepoConfig) {
  write(".airlock.yaml", "vcpus: 1\n");
  auto repo = loadRepoConfig(dir_->path());
  ASSERT_TRUE(repo) << repo.error().message;
  ASSERT_TRUE(*repo);
  EXPECT_EQ((*repo)->cpus, 1u);
}

TEST_F(LoaderTest, ReadsTheYmlSpellingAsTheRepoConfig) {
  write(".airlock.yml", "vcpus: 1\n");
  std::string path;
  auto repo = loadRepoConfig(dir_->path(), &path);
  ASSERT_TRUE(repo) << repo.error().message;
  ASSERT_TRUE(*repo);
  EXPECT_EQ((*repo)->cpus, 1u);
  EXPECT_EQ(path, dir_->path() + "/.airlock.yml");
  write(".airlock.yml", "vcpus: [\n");
  repo = loadRepoConfig(dir_->path());
  ASSERT_FALSE(repo);
  EXPECT_NE(repo.error().message.find(".airlock.yml:"), std::string::npos) << repo.error().message;
}

TEST_F(LoaderTest, BothRepoConfigSpellingsAreRefused) {
  write(".airlock.yaml", "vcpus: 1\n");
  write(".airlock.yml", "vcpus: 2\n");
  auto repo = loadRepoConfig(dir_->path());
  ASSERT_FALSE(repo);
  EXPECT_EQ(repo.error().code, exit_code::kUsage);
  EXPECT_NE(repo.error().message.find("has both .airlock.yaml and .airlock.yml"), std::string::npos)
      << repo.error().message;
  EXPECT_EQ(repo.error().message.find('\n'), std::string::npos);
}

TEST_F(LoaderTest, SymlinkedConfigIsRefused) {
  std::string target = write("elsewhere.yaml", "vcpus: 1\n");
  ASSERT_EQ(symlink(target.c_str(), (dir_->path() + "/.airlock.yaml").c_str()), 0);
  auto repo = loadRepoConfig(dir_->path());
  ASSERT_FALSE(repo);
  EXPECT_EQ(repo.error().code, exit_code::kUsage);
  EXPECT_NE(repo.error().message.find("is a symlink"), std::string::npos) << repo.error().message;
  ASSERT_EQ(symlink(target.c_str(), (dir_->path() + "/config.yaml").c_str()), 0);
  auto user = loadConfigFile(dir_->path() + "/config.yaml");
  ASSERT_FALSE(user);
  EXPECT_NE(user.error().message.find("is a symlink"), std::string::npos);
}

TEST_F(LoaderTest, OversizeConfigIsRefused) {
  write(".airlock.yaml", "# " + std::string(kMaxConfigBytes, 'x') + "\n");
  auto repo = loadRepoConfig(dir_->path());
  ASSERT_FALSE(repo);
  EXPECT_NE(repo.error().message.find("at most 256 KiB"), std::string::npos) << repo.error().message;
}

TEST_F(LoaderTest, DirectoryInsteadOfFileIsRefused) {
  std::filesystem::create_directory(dir_->path() + "/.airlock.yaml");
  auto repo = loadRepoConfig(dir_->path());
  ASSERT_FALSE(repo);
  EXPECT_NE(repo.error().message.find("not a regular file"), std::string::npos) << repo.error().message;
}

// Which directory that is ($XDG_CONFIG_HOME, else ~/.config) is
// readHostContext's call (tests/unit/common/host_context_test.cc).
TEST(UserConfigPath, IsConfigYamlInTheConfigDir) {
  EXPECT_EQ(userConfigPath("/home/someone/.config/airlock"), "/home/someone/.config/airlock/config.yaml");
}

// git_token and an MCP server's token name where the token is, never the
// token: a pasted token must not pass as a source (and be logged as one).
TEST(TokenSource, IsEnvOrSecretWithAName) {
  for (const char* ok : {"env:GITHUB_TOKEN", "secret:gh", "env:X"}) EXPECT_TRUE(isTokenSource(ok)) << ok;
  for (const char* bad : {"", "env:", "secret:", "ghp_0123456789abcdef", "ENV:X", "file:/tmp/t", " env:X", "secret"})
    EXPECT_FALSE(isTokenSource(bad)) << bad;
}

}  // namespace
}  // namespace airlock::config
