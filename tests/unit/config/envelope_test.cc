// `airlock info --json` snapshots: the envelope of each built-in agent with
// no config, compared against tests/unit/config/expected/<agent>.json with
// the volatile fields (paths, host, digests) normalised. Regenerate with
// AIRLOCK_UPDATE_SNAPSHOTS=1.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "agents/registry.h"
#include "common/paths.h"
#include "config/envelope.h"
#include "config/loader.h"

namespace airlock::config {
namespace {

using json = nlohmann::json;

class EnvelopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("/tmp", "airlock-info-");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    for (const char* sub : {"/config", "/cache", "/state", "/workspace"})
      ASSERT_TRUE(makeDirs(dir_->path() + sub));
    setenv("XDG_CONFIG_HOME", (dir_->path() + "/config").c_str(), 1);
    setenv("AIRLOCK_CACHE_DIR", (dir_->path() + "/cache").c_str(), 1);
    setenv("XDG_STATE_HOME", (dir_->path() + "/state").c_str(), 1);
  }

  void writeFile(const std::string& rel, const std::string& text) {
    std::string path = dir_->path() + "/" + rel;
    ASSERT_TRUE(makeDirs(path.substr(0, path.rfind('/'))));
    std::ofstream(path) << text;
  }

  /// What `airlock info AGENT --json` prints, normalised.
  json info(const std::string& agent, const ConfigLayer& flags = {}) {
    auto effective = loadEffectiveConfig(agent, dir_->path() + "/workspace", flags);
    EXPECT_TRUE(effective) << effective.error().message;
    auto backend = describeBackend(vm::HostFacts{});
    auto image = describeImage(*effective);
    json j = envelopeJson(buildEnvelope(std::move(*effective), backend, image, false));
    j["workspace"]["path"] = "<workspace>";
    j["backend"]["kernel"] = "<kernel>";
    if (j["image"]["digest"].get<std::string>().starts_with("sha256:")) j["image"]["digest"] = "<digest>";
    for (auto& i : j["ignored"]) i["file"] = "<repo>/.airlock.yaml";
    return j;
  }

  std::optional<TempDir> dir_;
};

TEST_F(EnvelopeTest, MatchesSnapshotForEachBuiltinAgent) {
  auto registry = agents::AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  for (const auto& name : registry->names()) {
    json actual = info(name);
    std::string path = std::string(AIRLOCK_CONFIG_TEST_DIR) + "/expected/" + name + ".json";
    if (const char* update = getenv("AIRLOCK_UPDATE_SNAPSHOTS"); update && *update == '1') {
      std::ofstream(path) << actual.dump(2) << "\n";
      continue;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in) << path << " is missing; run with AIRLOCK_UPDATE_SNAPSHOTS=1";
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(actual, json::parse(text.str())) << name << ":\n" << actual.dump(2);
  }
}

TEST_F(EnvelopeTest, EnvelopeNamesTheBackendAndNoValues) {
  setenv("ANTHROPIC_API_KEY", "sk-secret-value", 1);
  auto effective = loadEffectiveConfig("claude-code", dir_->path() + "/workspace", {});
  ASSERT_TRUE(effective);
  auto backend = describeBackend(vm::HostFacts{true, false, true});
  EXPECT_EQ(backend.accel, "tcg");
  EXPECT_NE(backend.note.find("kvm_pvm"), std::string::npos);
  auto envelope = buildEnvelope(std::move(*effective), backend, {}, false);
  std::string all = envelopeJson(envelope).dump() + envelopeText(envelope);
  EXPECT_EQ(all.find("sk-secret-value"), std::string::npos);
  EXPECT_NE(all.find("ANTHROPIC_API_KEY"), std::string::npos);
  unsetenv("ANTHROPIC_API_KEY");
}

TEST_F(EnvelopeTest, RepoWideningEgressIsIgnoredAndShown) {
  writeFile("workspace/.airlock.yaml",
            "egress_profile: permissive\nallow_hosts: [evil.example.com]\nhost_ports: [22]\nvcpus: 1\n");
  json j = info("claude-code");
  EXPECT_EQ(j["egress"]["profile"], "standard");
  EXPECT_EQ(j["egress"]["from"], "built-in");
  for (const auto& h : j["egress"]["hosts"]) EXPECT_NE(h["host"], "evil.example.com");
  EXPECT_EQ(j["host_ports"].size(), 0u);
  EXPECT_EQ(j["vcpus"], (json{{"value", 1}, {"from", "repo"}}));
  ASSERT_EQ(j["ignored"].size(), 3u);
  EXPECT_EQ(j["ignored"][0]["key"], "egress_profile");
  EXPECT_EQ(j["ignored"][1]["key"], "allow_hosts: evil.example.com");
  EXPECT_EQ(j["ignored"][1]["reason"], "a repo config cannot add egress hosts");
}

TEST_F(EnvelopeTest, LayersAreShownForEveryValue) {
  writeFile("config/airlock/config.yaml",
            "memory_mib: 2048\nallow_hosts: [\"git.example.com:8443\"]\nhost_ports: [11434]\n"
            "env_forward: [GITHUB_TOKEN]\nexclude: [data/]\nreview: auto\n");
  writeFile("workspace/.airlock.yaml", "egress_profile: locked\nremove_hosts: [api.anthropic.com]\n");
  ConfigLayer flags;
  flags.cpus = 4;
  json j = info("claude-code", flags);
  EXPECT_EQ(j["vcpus"]["from"], "flag");
  EXPECT_EQ(j["memory_mib"], (json{{"value", 2048}, {"from", "user"}}));
  EXPECT_EQ(j["review"], (json{{"policy", "auto"}, {"from", "user"}}));
  EXPECT_EQ(j["egress"]["profile"], "locked");
  EXPECT_EQ(j["egress"]["from"], "repo");
  ASSERT_EQ(j["egress"]["hosts"].size(), 1u);
  EXPECT_EQ(j["egress"]["hosts"][0], (json{{"host", "git.example.com"}, {"ports", {8443}}, {"why", "allow_hosts"},
                                           {"from", "user"}}));
  EXPECT_EQ(j["egress"]["removed"][0]["host"], "api.anthropic.com");
  EXPECT_EQ(j["host_ports"][0], (json{{"port", 11434}, {"guest", "10.0.2.2:11434"}, {"from", "user"}}));
  EXPECT_EQ(j["env_forward"].back(), (json{{"name", "GITHUB_TOKEN"}, {"from", "user"}}));
  EXPECT_EQ(j["excludes"]["patterns"][0], (json{{"pattern", "data/"}, {"from", "user"}}));
  EXPECT_TRUE(j["ignored"].empty());
}

TEST_F(EnvelopeTest, DirectModeShowsNoReviewAndTheMissingConfirmation) {
  ConfigLayer flags;
  flags.workspaceMode = WorkspaceMode::kDirect;
  json j = info("codex", flags);
  EXPECT_EQ(j["workspace"]["mode"], "direct");
  EXPECT_EQ(j["workspace"]["shared"], "live directory, read-write");
  EXPECT_NE(j["workspace"]["direct_mode_problem"].get<std::string>().find("--yes"), std::string::npos);
  EXPECT_EQ(j["excludes"]["applied"], false);
  EXPECT_TRUE(j["review"]["policy"].get<std::string>().starts_with("none"));
}

TEST_F(EnvelopeTest, CustomAgentFromUserConfig) {
  writeFile("config/airlock/config.yaml",
            "agents:\n  mine:\n    description: Mine\n    image: {npm_package: mine, version: \"1.0.0\", binary: m, "
            "install_as: m}\n    command: [m]\n    egress: {model_hosts: [api.example.com], extra_hosts: []}\n");
  json j = info("mine");
  EXPECT_EQ(j["agent"], "mine");
  EXPECT_EQ(j["egress"]["hosts"][0]["host"], "api.example.com");
}

TEST_F(EnvelopeTest, PermissiveAllowsAnyHost) {
  writeFile("config/airlock/config.yaml", "egress_profile: permissive\n");
  json j = info("gemini");
  EXPECT_EQ(j["egress"]["any_host"], true);
  EXPECT_TRUE(j["egress"]["hosts"].empty());
}

}  // namespace
}  // namespace airlock::config
