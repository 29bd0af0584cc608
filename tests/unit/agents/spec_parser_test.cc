#include "agents/spec_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "agents/spec_format.h"
#include "common/exit_codes.h"

namespace airlock::agents {
namespace {

const std::string kMinimal = R"(name: demo
description: A demo agent
image:
  npm_package: "@demo/cli"
  version: "1.2.3"
  binary: bin/demo
  install_as: demo
command: [demo]
)";

std::string errorOf(const std::string& yaml, const std::string& file = "demo.yaml") {
  auto spec = parseAgentSpec(yaml, file);
  EXPECT_FALSE(spec.has_value());
  if (spec) return {};
  EXPECT_EQ(spec.error().code, exit_code::kUsage);
  return spec.error().message;
}

/// errorOf(`yaml` with its first `from` replaced by `to`).
std::string errorWith(std::string yaml, const std::string& from, const std::string& to) {
  yaml.replace(yaml.find(from), from.size(), to);
  return errorOf(yaml);
}

TEST(SpecParser, MinimalSpecGetsDefaults) {
  auto spec = parseAgentSpec(kMinimal, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->name, "demo");
  EXPECT_EQ(spec->image.npmPackage, "@demo/cli");
  EXPECT_EQ(spec->image.programPackage(), "@demo/cli");
  EXPECT_EQ(spec->image.programVersion(), "1.2.3");
  EXPECT_FALSE(spec->image.node);
  EXPECT_EQ(spec->command, std::vector<std::string>{"demo"});
  EXPECT_EQ(spec->cpus, 2);
  EXPECT_EQ(spec->memoryMib, 4096);
  EXPECT_EQ(spec->scratchMib, 8192);
  EXPECT_TRUE(spec->homeFiles.empty());
}

TEST(SpecParser, FullSpec) {
  auto spec = parseAgentSpec(kMinimal + R"(default_args: ["--yes"]
env: {A: "1", B: two}
env_forward: [API_KEY, "DEMO_*"]
home_files:
  ".demo/config.json": '{"url": "${DEMO_URL:-http://x}"}'
cpus: 4
memory_mib: 2048
scratch_mib: 1024
egress:
  model_hosts: [api.demo.com]
  extra_hosts: []
)",
                             "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->defaultArgs, std::vector<std::string>{"--yes"});
  EXPECT_EQ(spec->env.at("B"), "two");
  EXPECT_EQ(spec->envForward.size(), 2u);
  EXPECT_EQ(spec->homeFiles.at(".demo/config.json"), R"({"url": "${DEMO_URL:-http://x}"})");
  EXPECT_EQ(spec->cpus, 4);
  EXPECT_EQ(spec->egress.modelHosts, std::vector<std::string>{"api.demo.com"});
}

TEST(SpecParser, McpNamesTheFileAndTheArgumentsThatPointTheAgentAtIt) {
  auto spec = parseAgentSpec(
      kMinimal + "mcp: {file: .airlock/mcp.json, args: [--mcp-config, /home/agent/.airlock/mcp.json]}\n", "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->mcp.file, ".airlock/mcp.json");
  EXPECT_EQ(spec->mcp.args, (std::vector<std::string>{"--mcp-config", "/home/agent/.airlock/mcp.json"}));
  auto again = parseAgentSpec(formatAgentSpec(*spec), "demo.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->mcp, spec->mcp);
  EXPECT_NE(errorOf(kMinimal + "mcp: {file: /etc/x.json}\n").find("relative path"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "mcp: {file: ../x.json}\n").find("relative path"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "mcp: {args: [x]}\n").find("'file'"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "mcp: {file: a.json, servers: {}}\n").find("servers"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "mcp: {file: a.json, format: yaml}\n").find("codex-toml"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "state: [.demo]\nmcp: {file: .demo/mcp.json}\n").find("state_exclude"),
            std::string::npos);
  EXPECT_TRUE(parseAgentSpec(
      kMinimal + "state: [.demo]\nstate_exclude: [.demo/mcp.json]\nmcp: {file: .demo/mcp.json}\n", "demo.yaml"));
  EXPECT_NE(errorOf(kMinimal + "seed_files: {a.json: '{}'}\nmcp: {file: a.json}\n").find("seed_files"),
            std::string::npos);
  auto toml = parseAgentSpec(kMinimal + "mcp: {file: .codex/config.toml, format: codex-toml}\n", "demo.yaml");
  ASSERT_TRUE(toml) << toml.error().message;
  EXPECT_EQ(toml->mcp.format, McpFormat::kCodexToml);
}

TEST(SpecParser, UnknownKeyNamesKeyAndFile) {
  std::string msg = errorOf(kMinimal + "imgae: {}\n");
  EXPECT_NE(msg.find("demo.yaml:9:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'imgae'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("known keys: name"), std::string::npos) << msg;
}

TEST(SpecParser, UnknownNestedKeyNamesSection) {
  std::string yaml = kMinimal;
  yaml.replace(yaml.find("  binary:"), 0, "  nodes: true\n");
  std::string msg = errorOf(yaml);
  EXPECT_NE(msg.find("unknown key 'nodes' in 'image'"), std::string::npos) << msg;
}

TEST(SpecParser, DuplicateKey) {
  EXPECT_NE(errorOf(kMinimal + "cpus: 2\ncpus: 3\n").find("duplicate key 'cpus'"), std::string::npos);
}

TEST(SpecParser, WrongTypes) {
  EXPECT_NE(errorOf(kMinimal + "cpus: two\n").find("'cpus' must be a plain decimal integer from 1 to 64"),
            std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "cpus: 2.5\n").find("'cpus' must be a plain decimal integer"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "cpus: 0\n").find("'cpus' must be a plain decimal integer"), std::string::npos);
}

// The same number rule as the config's keys: custom agents in the user config
// are parsed here, so `cpus: "2"` or `0x10` must not slip through as numbers.
TEST(SpecParser, NumbersArePlainDecimalIntegers) {
  for (const char* bad : {"cpus: \"2\"\n", "cpus: 0x10\n", "cpus: 010\n", "cpus: +2\n", "cpus: !!int 2\n",
                          "memory_mib: 1e3\n", "memory_mib: '2048'\n"})
    EXPECT_NE(errorOf(kMinimal + bad).find("must be a plain decimal integer"), std::string::npos) << bad;
  auto good = parseAgentSpec(kMinimal + "cpus: 4\nmemory_mib: 2048\n", "demo.yaml");
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->cpus, 4);
  EXPECT_EQ(good->memoryMib, 2048);
  EXPECT_NE(errorOf(kMinimal + "default_args: --yes\n").find("'default_args' must be a list of strings"),
            std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "default_args: [[a]]\n").find("'default_args' must be a list of strings"),
            std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "env: [A]\n").find("'env' must be a mapping"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "env: {A: [1]}\n").find("'env' must be a mapping"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "egress: [a]\n").find("'egress' must be a mapping"), std::string::npos);
  std::string yaml = kMinimal;
  yaml.replace(yaml.find("  binary:"), 0, "  node: maybe\n");
  EXPECT_NE(errorOf(yaml).find("'node' must be true or false"), std::string::npos);
  // A PyPI program (Hermes): its own keys only.
  const std::string pypi =
      "name: demo\ndescription: d\nimage:\n  pypi_package: hermes-agent\n  version: \"0.19.0\"\n"
      "  binary: hermes\n  install_as: hermes\ncommand: [hermes]\n";
  auto fromPypi = parseAgentSpec(pypi, "demo.yaml");
  ASSERT_TRUE(fromPypi) << fromPypi.error().message;
  EXPECT_EQ(fromPypi->image.pypiPackage, "hermes-agent");
  EXPECT_TRUE(fromPypi->image.npmPackage.empty());
  EXPECT_FALSE(fromPypi->image.baseOnly());
  for (const auto& [from, to, why] :
       {std::tuple{"hermes-agent", "hermes agent", "is not a PyPI project name"},
        std::tuple{"hermes-agent", "-hermes", "is not a PyPI project name"},
        std::tuple{"\"0.19.0\"", "\">=0.19\"", "is not an exact version"},
        std::tuple{"binary: hermes", "binary: bin/hermes", "is not a console script name"},
        std::tuple{"install_as: hermes", "install_as: ../hermes", "is not a file name"},
        std::tuple{"binary: hermes", "binary: hermes\n  node: true", "'node' is for npm packages"},
        std::tuple{"binary: hermes", "binary: hermes\n  npm_package: x", "'npm_package' is for npm packages"}}) {
    std::string bad = pypi;
    bad.replace(bad.find(from), std::string_view(from).size(), to);
    EXPECT_NE(errorOf(bad).find(why), std::string::npos) << bad << "\n" << errorOf(bad);
  }
  // A release archive named by the package (Crush): only for this platform,
  // and not with a Node program.
  yaml = kMinimal;
  yaml.replace(yaml.find("  binary:"), 0, "  archive: linux-x64\n");
  auto archived = parseAgentSpec(yaml, "demo.yaml");
  ASSERT_TRUE(archived) << archived.error().message;
  EXPECT_EQ(archived->image.archive, "linux-x64");
  yaml = kMinimal;
  yaml.replace(yaml.find("  binary:"), 0, "  archive: darwin-arm64\n");
  EXPECT_NE(errorOf(yaml).find("'archive' must be linux-x64"), std::string::npos);
  yaml = kMinimal;
  yaml.replace(yaml.find("  binary:"), 0, "  archive: linux-x64\n  node: true\n");
  EXPECT_NE(errorOf(yaml).find("'archive' and 'node: true' exclude each other"), std::string::npos);
  yaml = kMinimal;
  yaml.replace(yaml.find("\"1.2.3\""), 7, "[1]");
  EXPECT_NE(errorOf(yaml).find("'version' must be a non-empty string"), std::string::npos);
}

TEST(SpecParser, MissingRequired) {
  auto without = [](const std::string& line) {
    std::string yaml = kMinimal;
    yaml.erase(yaml.find(line), line.size());
    return errorOf(yaml);
  };
  EXPECT_NE(without("description: A demo agent\n").find("missing required key 'description'"), std::string::npos);
  EXPECT_NE(without("command: [demo]\n").find("missing required key 'command'"), std::string::npos);
  EXPECT_NE(without("  version: \"1.2.3\"\n").find("missing required key 'version'"), std::string::npos);
  EXPECT_NE(without("  install_as: demo\n").find("missing required key 'install_as'"), std::string::npos);
  EXPECT_NE(errorOf("name: demo\ndescription: d\ncommand: [d]\n").find("missing required key 'image'"),
            std::string::npos);
}

TEST(SpecParser, EmptyCommandIsAnError) {
  std::string yaml = kMinimal;
  yaml.replace(yaml.find("[demo]"), 6, "[]");
  EXPECT_NE(errorOf(yaml).find("'command' must name a program"), std::string::npos);
}

TEST(SpecParser, NameMustMatchFile) {
  std::string msg = errorOf(kMinimal, "other.yaml");
  EXPECT_NE(msg.find("name 'demo' does not match the file name (expected demo.yaml)"), std::string::npos) << msg;
}

TEST(SpecParser, MalformedValues) {
  auto with = [](const std::string& from, const std::string& to) { return errorWith(kMinimal, from, to); };
  EXPECT_NE(with("\"1.2.3\"", "latest").find("not an exact version"), std::string::npos);
  EXPECT_NE(with("\"1.2.3\"", "\"^1.2\"").find("not an exact version"), std::string::npos);
  EXPECT_NE(with("\"@demo/cli\"", "\"Demo CLI\"").find("not an npm package name"), std::string::npos);
  EXPECT_NE(with("bin/demo", "../../etc/passwd").find("not a relative path"), std::string::npos);
  EXPECT_NE(with("install_as: demo", "install_as: a/b").find("not a file name"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "env_forward: [\"A-B\"]\n").find("not a variable name"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "home_files: {/etc/passwd: x}\n").find("not a relative path"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "home_files: {a: \"${BAD-NAME}\"}\n").find("home file 'a': bad variable name"),
            std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "egress: {model_hosts: [\"http://x\"]}\n").find("not a host name"),
            std::string::npos);
  EXPECT_NE(errorOf("name: [\n", "demo.yaml").find("demo.yaml:2:1: invalid YAML"), std::string::npos);
  EXPECT_NE(errorOf("- a\n").find("must be a YAML mapping"), std::string::npos);
}

TEST(SpecParser, FormatRoundTrips) {
  auto spec = parseAgentSpec(kMinimal + R"(env: {A: "1"}
home_files:
  "x/y.toml": |
    a = "${A:-b}"
    c = 1
seed_files: {".demo.json": '{"onboarded": true}'}
settings: [.demo/MEMORY.md, {path: .demo/settings.json, keys: [model, hooks]}]
state: [.demo]
state_max_mib: 64
egress: {model_hosts: [h.example]}
)",
                             "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  std::string text = formatAgentSpec(*spec);
  auto again = parseAgentSpec(text, "demo.yaml");
  ASSERT_TRUE(again) << again.error().message << "\n" << text;
  EXPECT_EQ(*again, *spec) << text;
}

// Issue 16: the user's settings an agent takes from the host, its seeds
// and its state cap.
TEST(SpecParser, SettingsSeedsAndStateCap) {
  auto spec = parseAgentSpec(kMinimal + R"(seed_files: {".demo.json": '{"url": "${DEMO_URL:-x}"}'}
settings:
  - .demo/MEMORY.md
  - {path: .demo/settings.json, keys: [model, env]}
state: [.demo]
state_max_mib: 32
)",
                             "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->seedFiles.at(".demo.json"), R"({"url": "${DEMO_URL:-x}"})");
  ASSERT_EQ(spec->settings.size(), 2u);
  EXPECT_EQ(spec->settings[0], (SettingsImport{".demo/MEMORY.md", {}}));
  EXPECT_EQ(spec->settings[1], (SettingsImport{".demo/settings.json", {"model", "env"}}));
  EXPECT_EQ(spec->stateMaxMib, 32);
  EXPECT_NE(errorOf(kMinimal + "settings: [/etc/passwd]\n").find("not a relative path"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "settings: [../x]\n").find("not a relative path"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "settings: [a, a]\n").find("twice"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "settings: [{path: a.toml, keys: [x]}]\n").find("JSON files only"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "settings: [{path: a.json, keys: []}]\n").find("at least one key"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "settings: [{path: a.json, key: [x]}]\n").find("unknown key 'key'"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "settings: a\n").find("'settings' must be a list"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "seed_files: {a: \"${BAD-NAME}\"}\n").find("seed file 'a'"), std::string::npos);
  EXPECT_NE(errorOf(kMinimal + "state_max_mib: 0\n").find("'state_max_mib'"), std::string::npos);
}

TEST(SpecParser, LoginRoutesOnlyToHttpsAndRoundTrips) {
  const std::string login = R"(login:
  format: claude-oauth
  file: .demo/.credentials.json
  token_env: DEMO_TOKEN
  base_url_env: DEMO_BASE_URL
  upstream: https://api.example.com
  paths: [/v1/]
  refresh_url: https://auth.example.com/oauth/token
  client_id: demo-client
  billing_env: [DEMO_API_KEY]
  account_file: .demo.json
  account_key: account
)";
  auto spec = parseAgentSpec(kMinimal + login, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->login.upstream, "https://api.example.com");
  EXPECT_EQ(spec->login.paths, std::vector<std::string>{"/v1/"});
  EXPECT_EQ(spec->login.billingEnv, std::vector<std::string>{"DEMO_API_KEY"});
  EXPECT_EQ(spec->login.accountKey, "account");
  auto again = parseAgentSpec(formatAgentSpec(*spec), "demo.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
  auto with = [&](const std::string& from, const std::string& to) { return errorWith(kMinimal + login, from, to); };
  // The broker and the refresh send the user's real token: never in clear text, never to a path.
  EXPECT_NE(with("https://api.example.com", "http://api.example.com").find("https:// URL"), std::string::npos);
  EXPECT_NE(with("https://auth.example.com", "http://auth.example.com").find("https:// URL"), std::string::npos);
  EXPECT_NE(with("https://api.example.com", "https://api.example.com/v1").find("scheme and host only"),
            std::string::npos);
  EXPECT_NE(with("https://api.example.com", "https://api.example.com?x=1"), "");
  // The token goes to the host named: no user info hiding another host, no IP literal, no fragment.
  for (const char* url : {"https://api.example.com@evil.example", "https://user:pw@api.example.com",
                          "https://[::1]", "https://api.example.com:", "https://api.example.com:99999x",
                          "https://API.example.com"})
    EXPECT_NE(with("https://api.example.com", url), "") << url;
  EXPECT_NE(with("https://api.example.com", "https://api.example.com@evil.example").find("naming a host"),
            std::string::npos);
  EXPECT_NE(with("https://auth.example.com/oauth/token", "https://auth.example.com/oauth/token#x").find("naming a host"),
            std::string::npos);
  {
    std::string yaml = kMinimal + login;
    yaml.replace(yaml.find("https://api.example.com"), 23, "https://api.example.com:8443");
    EXPECT_TRUE(parseAgentSpec(yaml, "demo.yaml"));
  }
  // The account file goes into the VM: never the credential file.
  EXPECT_NE(with("account_file: .demo.json", "account_file: .demo/.credentials.json").find("must not be the credential"),
            std::string::npos);
  EXPECT_NE(with("format: claude-oauth", "format: netrc").find("not one airlock reads"), std::string::npos);
  EXPECT_NE(with("paths: [/v1/]", "paths: [v1/]").find("must start with /"), std::string::npos);
  EXPECT_NE(with("file: .demo/.credentials.json", "file: /etc/shadow").find("relative path"), std::string::npos);
  EXPECT_NE(with("account_file: .demo.json", "account_file: .demo.toml").find("JSON file"), std::string::npos);
  EXPECT_NE(with("client_id: demo-client", "clientid: demo-client").find("unknown key 'clientid'"), std::string::npos);
}

TEST(SpecParser, ALoginMayBringItsOwnVariablesHomeFilesAndAccountHosts) {
  const std::string login = R"(login:
  format: gemini-oauth
  file: .demo/creds.json
  token_env: DEMO_ACCESS_TOKEN
  base_url_env: DEMO_ENDPOINT
  upstream: https://api.example.com
  paths: ["/v1internal:"]
  refresh_url: https://auth.example.com/token
  client_id: demo-client
  client_secret: demo-public-secret
  account_file: .demo/accounts.json
  account_hosts: [who.example.com]
  env: {DEMO_USE_LOGIN: "true"}
  home_files:
    .demo/settings.json: '{"auth": "login"}'
)";
  auto spec = parseAgentSpec(kMinimal + login, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->login.clientSecret, "demo-public-secret");
  EXPECT_EQ(spec->login.accountKey, "");  // the file's top level
  EXPECT_EQ(spec->login.accountHosts, std::vector<std::string>{"who.example.com"});
  EXPECT_EQ(spec->login.env.at("DEMO_USE_LOGIN"), "true");
  EXPECT_EQ(spec->login.homeFiles.at(".demo/settings.json"), R"({"auth": "login"})");
  auto again = parseAgentSpec(formatAgentSpec(*spec), "demo.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
  auto with = [&](const std::string& from, const std::string& to) { return errorWith(kMinimal + login, from, to); };
  EXPECT_NE(with("DEMO_USE_LOGIN:", "1BAD:").find("variable name"), std::string::npos);
  EXPECT_NE(with(".demo/settings.json:", "/etc/passwd:").find("relative path"), std::string::npos);
  EXPECT_NE(with("[who.example.com]", "[\"who example\"]").find("host name"), std::string::npos);
  EXPECT_NE(with(R"('{"auth": "login"}')", "'${UNTERMINATED'").find("login home file"), std::string::npos);
  // The broker's HTTPS side needs both its URL's and its CA's variable.
  EXPECT_NE(with("  account_hosts:", "  tls_ca_env: DEMO_CA\n  account_hosts:").find("go together"), std::string::npos);
  auto tls = parseAgentSpec(kMinimal + login + "  tls_ca_env: DEMO_CA\n  tls_base_url_env: DEMO_TLS_URL\n", "demo.yaml");
  ASSERT_TRUE(tls) << tls.error().message;
  EXPECT_EQ(tls->login.tlsCaEnv, "DEMO_CA");
  auto tlsAgain = parseAgentSpec(formatAgentSpec(*tls), "demo.yaml");
  ASSERT_TRUE(tlsAgain) << tlsAgain.error().message;
  EXPECT_EQ(*tlsAgain, *tls);
}

// Issue 15, item 4: a login the broker cannot serve enters the VM; its
// spec names the hosts the agent reaches with it, and none of the broker's keys.
TEST(SpecParser, ALoginThatEntersTheVmNamesItsHostsAndNoBrokerRoute) {
  const std::string login = R"(login:
  format: opencode-oauth
  file: .local/share/demo/auth.json
  delivery: vm
  hosts: [chat.example.com, auth.example.com]
  billing_env: [DEMO_API_KEY]
  home_files:
    .config/demo/demo.json: '{"model": "login/model"}'
)";
  auto spec = parseAgentSpec(kMinimal + login, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->login.entersVm);
  EXPECT_EQ(spec->login.hosts, (std::vector<std::string>{"chat.example.com", "auth.example.com"}));
  auto again = parseAgentSpec(formatAgentSpec(*spec), "demo.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
  auto with = [&](const std::string& from, const std::string& to) { return errorWith(kMinimal + login, from, to); };
  EXPECT_NE(with("delivery: vm", "delivery: tmpfs").find("broker or vm"), std::string::npos);
  // Only OpenCode's login enters the VM; every other format is brokered, and OpenCode's cannot be.
  EXPECT_NE(with("format: opencode-oauth", "format: claude-oauth").find("only an opencode-oauth or token login"), std::string::npos);
  EXPECT_NE(with("  delivery: vm\n", "").find("needs 'delivery: vm'"), std::string::npos);
  EXPECT_NE(with("  delivery: vm\n", "  delivery: broker\n").find("needs 'delivery: vm'"), std::string::npos);
  EXPECT_NE(with("  hosts: [chat.example.com, auth.example.com]\n", "").find("hosts"), std::string::npos);
  EXPECT_NE(with("[chat.example.com,", "[\"chat example\",").find("host name"), std::string::npos);
  EXPECT_NE(with("  billing_env:", "  upstream: https://api.example.com\n  billing_env:").find("the broker's"),
            std::string::npos);
  EXPECT_NE(with("  billing_env:", "  refresh_url: https://a.example.com/t\n  billing_env:").find("the broker's"),
            std::string::npos);
  // The credential file is the real one: no home file may replace it.
  EXPECT_NE(with(".config/demo/demo.json:", ".local/share/demo/auth.json:").find("cannot be the credential file"),
            std::string::npos);
}

// `airlock login AGENT` in a VM: the agent's login command and the only
// hosts that VM reaches, both or neither.
TEST(SpecParser, ALoginCommandComesWithTheHostsItsVmReaches) {
  const std::string login = R"(login:
  format: codex-oauth
  file: .demo/auth.json
  login_command: [demo, login, --device-auth]
  login_hosts: [auth.example.com]
  base_url_env: DEMO_BASE_URL
  upstream: https://api.example.com
  paths: [/v1/]
  refresh_url: https://auth.example.com/oauth/token
  client_id: demo-client
)";
  auto spec = parseAgentSpec(kMinimal + login, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->login.loginCommand, (std::vector<std::string>{"demo", "login", "--device-auth"}));
  EXPECT_EQ(spec->login.loginHosts, std::vector<std::string>{"auth.example.com"});
  auto again = parseAgentSpec(formatAgentSpec(*spec), "demo.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
  std::string noHosts = kMinimal + login;
  noHosts.erase(noHosts.find("  login_hosts"), std::string("  login_hosts: [auth.example.com]\n").size());
  EXPECT_NE(errorOf(noHosts).find("go together"), std::string::npos);
  std::string badHost = kMinimal + login;
  badHost.replace(badHost.find("[auth.example.com]"), 18, "[\"auth example\"]");
  EXPECT_NE(errorOf(badHost).find("host name"), std::string::npos);
}

// What the login VM alone gets: home files over the spec's (Gemini's
// settings selecting its Google login) and a note for the user; both only
// with a login command, and never over the credential file.
TEST(SpecParser, TheLoginVmsOwnHomeFilesAndNoteGoWithItsCommand) {
  const std::string login = R"(login:
  format: gemini-oauth
  file: .demo/creds.json
  login_command: [demo]
  login_hosts: [auth.example.com]
  login_home_files:
    ".demo/settings.json": '{"auth": "${DEMO_AUTH:-google}"}'
  login_note: "type /quit once signed in"
  base_url_env: DEMO_BASE_URL
  upstream: https://api.example.com
  paths: [/v1/]
  refresh_url: https://auth.example.com/oauth/token
  client_id: demo-client
)";
  auto spec = parseAgentSpec(kMinimal + login, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->login.loginHomeFiles.at(".demo/settings.json"), "{\"auth\": \"${DEMO_AUTH:-google}\"}");
  EXPECT_EQ(spec->login.loginNote, "type /quit once signed in");
  auto again = parseAgentSpec(formatAgentSpec(*spec), "demo.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
  auto with = [&](const std::string& from, const std::string& to) { return errorWith(kMinimal + login, from, to); };
  EXPECT_NE(with("  login_command: [demo]\n  login_hosts: [auth.example.com]\n", "").find("go with 'login_command'"),
            std::string::npos);
  EXPECT_NE(with(".demo/settings.json", ".demo/creds.json").find("cannot be the credential file"), std::string::npos);
  EXPECT_NE(with("${DEMO_AUTH:-google}", "${DEMO_AUTH").find("login home file"), std::string::npos);
}

// A custom agent's long-lived token: delivered into the VM in the variable
// token_env names; no file, no broker keys, no login VM.
TEST(SpecParser, ATokenLoginIsAVariableThatEntersTheVm) {
  const std::string login = R"(login:
  format: token
  delivery: vm
  token_env: DEMO_TOKEN
  hosts: [api.example.com]
)";
  auto spec = parseAgentSpec(kMinimal + login, "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->login.entersVm);
  EXPECT_EQ(spec->login.tokenEnv, "DEMO_TOKEN");
  EXPECT_EQ(spec->login.file, "");
  auto again = parseAgentSpec(formatAgentSpec(*spec), "demo.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
  auto with = [&](const std::string& from, const std::string& to) { return errorWith(kMinimal + login, from, to); };
  EXPECT_NE(with("  delivery: vm\n", "").find("a token login needs 'delivery: vm'"), std::string::npos);
  EXPECT_NE(with("  token_env: DEMO_TOKEN\n", "").find("token_env"), std::string::npos);
  EXPECT_NE(with("DEMO_TOKEN", "demo token").find("variable name"), std::string::npos);
  EXPECT_NE(with("  delivery: vm\n", "  delivery: vm\n  file: .demo/token\n").find("has no file"), std::string::npos);
  EXPECT_NE(with("  hosts:", "  upstream: https://api.example.com\n  hosts:").find("the broker's"), std::string::npos);
  EXPECT_NE(with("  hosts:", "  login_command: [demo, login]\n  login_hosts: [a.example.com]\n  hosts:").find("not made in a VM"),
            std::string::npos);
}

// A brokered login has no hosts of its own: the broker reaches them.
TEST(SpecParser, ABrokeredLoginHasNoHostsKey) {
  const std::string login = R"(login:
  format: claude-oauth
  file: .demo/.credentials.json
  base_url_env: DEMO_BASE_URL
  upstream: https://api.example.com
  paths: [/v1/]
  refresh_url: https://auth.example.com/oauth/token
  client_id: demo-client
  hosts: [api.example.com]
)";
  EXPECT_NE(errorOf(kMinimal + login).find("'hosts' goes with 'delivery: vm'"), std::string::npos);
}

TEST(SpecParser, ImageReferenceInsteadOfARecipe) {
  const std::string yaml = R"(name: team-agent
description: Our agent, from our registry
image: ghcr.io/example/team-agent:1.4
command: [team-agent, --yes]
)";
  auto spec = parseAgentSpec(yaml, "team-agent.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->image.reference, "ghcr.io/example/team-agent:1.4");
  EXPECT_EQ(spec->image.npmPackage, "");
  auto again = parseAgentSpec(formatAgentSpec(*spec), "team-agent.yaml");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
  std::string bad = yaml;
  bad.replace(bad.find("ghcr.io"), 0, "two words ");
  EXPECT_NE(errorOf(bad, "team-agent.yaml").find("'image' must be an image reference"), std::string::npos);
  bad = yaml;
  bad.replace(bad.find("ghcr.io/example/team-agent:1.4"), 30, "[a]");
  EXPECT_NE(errorOf(bad, "team-agent.yaml").find("'image' must be an image reference"), std::string::npos);
}

// `image: {}`: the Debian base image alone (the shell agent's); any recipe
// field without npm_package is an error naming it.
TEST(SpecParser, AnEmptyImageIsTheBaseImageAlone) {
  const std::string yaml = R"(name: sh
description: A shell
image: {}
command: [bash, -l]
)";
  auto spec = parseAgentSpec(yaml, "sh.yaml");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->image.baseOnly());
  auto again = parseAgentSpec(formatAgentSpec(*spec), "sh.yaml");
  ASSERT_TRUE(again) << again.error().message << "\n" << formatAgentSpec(*spec);
  EXPECT_EQ(*again, *spec);
  std::string bad = yaml;
  bad.replace(bad.find("{}"), 2, "{version: \"1.0.0\"}");
  EXPECT_NE(errorOf(bad, "sh.yaml").find("'version' needs 'npm_package'"), std::string::npos);
  bad = yaml;
  bad.replace(bad.find("{}"), 2, "{node: true}");
  EXPECT_NE(errorOf(bad, "sh.yaml").find("'node' needs 'npm_package'"), std::string::npos);
  EXPECT_FALSE(parseAgentSpec(kMinimal, "demo.yaml")->image.baseOnly());
}

}  // namespace
}  // namespace airlock::agents
