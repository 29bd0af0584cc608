// The envelope-changing flags of `airlock run`, which `airlock info` takes
// too: parsed as the verbs parse them, mapped by the one flagLayer() both
// use, they change the settings and the envelope the same way.

#include <gtest/gtest.h>
#include <stdlib.h>

#include "cli/run_flags.h"
#include "common/paths.h"
#include "config/effective.h"
#include "config/loader.h"
#include "preflight/envelope.h"

namespace airlock::cli {
namespace {

using json = nlohmann::json;

class RunFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("/tmp", "airlock-run-flags-");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    for (const char* sub : {"/config", "/cache", "/workspace"}) ASSERT_TRUE(makeDirs(dir_->path() + sub));
  }

  /// Parses `argv` as a verb with addPolicyFlags (what run and info register).
  PolicyFlags parse(std::vector<std::string> argv) {
    CLI::App app("test");
    PolicyFlags flags;
    addPolicyFlags(app, flags);
    std::reverse(argv.begin(), argv.end());
    app.parse(argv);
    return flags;
  }

  std::optional<TempDir> dir_;
};

TEST_F(RunFlagsTest, EveryEnvelopeFlagReachesTheSettingsAndTheEnvelope) {
  auto flags = parse({"--cpus", "3", "--memory", "2048", "--review", "auto", "--workspace-mode", "snapshot",
                      "--exclude", "*.db", "--egress-profile", "locked", "--allow-host", "git.example.com:8443",
                      "-e", "FOO=secret-value", "--env", "BAR", "--host-port", "5432", "--image",
                      "ghcr.io/acme/agent:1"});
  config::ConfigLayer layer = flagLayer(flags);
  auto effective = config::loadEffectiveConfig(config::userConfigPath(dir_->path() + "/config"), "claude-code",
                                               dir_->path() + "/workspace", layer);
  ASSERT_TRUE(effective) << effective.error().message;
  const config::Settings settings = effective->resolved.settings;
  EXPECT_EQ(settings.cpus.value, 3u);
  EXPECT_EQ(settings.cpus.layer, config::Layer::kFlag);
  EXPECT_EQ(settings.memoryMib.value, 2048u);
  ASSERT_TRUE(settings.review);
  EXPECT_EQ(settings.review->value, config::ReviewPolicy::kAuto);
  EXPECT_EQ(settings.egressProfile.value, egress::Profile::kLocked);

  auto hostPorts = parseHostPorts(flags.egress.hostPorts);
  ASSERT_TRUE(hostPorts);
  const std::string cache = dir_->path() + "/cache";
  auto image = preflight::describeImage(cache, *effective, flags.image);
  auto envelope = preflight::buildEnvelope(std::move(*effective), preflight::describeBackend(cache, {}), image,
                                           preflight::RunPorts{*hostPorts, {}}, false);
  ASSERT_TRUE(envelope) << envelope.error().message;
  json j = preflight::envelopeJson(*envelope);
  EXPECT_EQ(j["vcpus"], (json{{"value", 3}, {"from", "flag"}}));
  EXPECT_EQ(j["memory_mib"], (json{{"value", 2048}, {"from", "flag"}}));
  EXPECT_EQ(j["review"], (json{{"policy", "auto"}, {"from", "flag"}}));
  EXPECT_EQ(j["workspace"]["mode"], "snapshot");
  EXPECT_EQ(j["excludes"]["patterns"].back(), (json{{"pattern", "*.db"}, {"from", "flag"}}));
  EXPECT_EQ(j["egress"]["profile"], "locked");
  EXPECT_EQ(j["egress"]["from"], "flag");
  EXPECT_EQ(j["egress"]["hosts"].back(), (json{{"host", "git.example.com"}, {"ports", {8443}},
                                               {"why", "allow_hosts"}, {"from", "flag"}}));
  EXPECT_EQ(j["host_ports"][0], (json{{"port", 5432}, {"guest", "10.0.2.2:5432"}, {"from", "flag"}}));
  EXPECT_EQ(j["image"]["reference"], "ghcr.io/acme/agent:1");
  EXPECT_EQ(j["image"]["source"], "registry");
  EXPECT_EQ(j["image"]["from"], "flag");
  json names = json::array();
  for (const auto& v : j["env_forward"])
    if (v["from"] == "flag") names.push_back(v["name"]);
  EXPECT_EQ(names, (json{"FOO", "BAR"}));
  EXPECT_EQ(j.dump().find("secret-value"), std::string::npos);  // names only, never values
}

TEST_F(RunFlagsTest, NoFlagsIsAnEmptyLayer) {
  config::ConfigLayer layer = flagLayer(parse({}));
  EXPECT_FALSE(layer.cpus);
  EXPECT_FALSE(layer.memoryMib);
  EXPECT_FALSE(layer.review);
  EXPECT_FALSE(layer.workspaceMode);
  EXPECT_FALSE(layer.egressProfile);
  EXPECT_TRUE(layer.allowHosts.empty());
  EXPECT_TRUE(layer.envForward.empty());
  EXPECT_TRUE(layer.excludes.empty());
}

TEST_F(RunFlagsTest, BadValuesAreRefusedAtParse) {
  EXPECT_THROW(parse({"--cpus", "0"}), CLI::ParseError);
  EXPECT_THROW(parse({"--egress-profile", "open"}), CLI::ParseError);
  EXPECT_THROW(parse({"--workspace-mode", "live"}), CLI::ParseError);
}

}  // namespace
}  // namespace airlock::cli
