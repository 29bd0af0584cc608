// `airlock info --json` snapshots: the envelope of each built-in agent with
// no config, compared against tests/unit/preflight/expected/<agent>.json with
// the volatile fields (paths, host, digests) normalised. Regenerate with
// AIRLOCK_UPDATE_SNAPSHOTS=1.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "agents/registry.h"
#include "common/fd.h"
#include "common/paths.h"
#include "config/effective.h"
#include "config/loader.h"
#include "preflight/envelope.h"
#include "vm/guest_kernel.h"

namespace airlock::preflight {
namespace {

using namespace airlock::config;
using json = nlohmann::json;

class EnvelopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("/tmp", "airlock-info-");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    for (const char* sub : {"/config", "/cache", "/state", "/workspace"})
      ASSERT_TRUE(makeDirs(dir_->path() + sub));
  }

  /// The user config file, as HostDirs::config = <dir>/config/airlock gives it.
  std::string userPath() const { return userConfigPath(dir_->path() + "/config/airlock"); }
  /// HostDirs::cache.
  std::string cache() const { return dir_->path() + "/cache"; }

  void writeFile(const std::string& rel, const std::string& text) {
    std::string path = dir_->path() + "/" + rel;
    ASSERT_TRUE(makeDirs(path.substr(0, path.rfind('/'))));
    std::ofstream(path) << text;
  }

  /// What `airlock info AGENT --json` prints, normalised.
  json info(const std::string& agent, const ConfigLayer& flags = {}, RunPorts ports = {}) {
    auto effective = loadEffectiveConfig(userPath(), agent, dir_->path() + "/workspace", flags);
    EXPECT_TRUE(effective) << effective.error().message;
    auto backend = describeBackend(cache(), vm::HostFacts{});
    auto image = describeImage(cache(), *effective);
    auto envelope = buildEnvelope(std::move(*effective), backend, image, std::move(ports), false);
    EXPECT_TRUE(envelope) << envelope.error().message;
    json j = envelopeJson(*envelope);
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
    std::string path = std::string(AIRLOCK_PREFLIGHT_TEST_DIR) + "/expected/" + name + ".json";
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
  auto effective = loadEffectiveConfig(userPath(), "claude-code", dir_->path() + "/workspace", {});
  ASSERT_TRUE(effective);
  auto backend = describeBackend(cache(), vm::HostFacts{true, false, true});
  EXPECT_EQ(backend.accel, "tcg");
  EXPECT_NE(backend.note.find("kvm_pvm"), std::string::npos);
  auto envelope = buildEnvelope(std::move(*effective), backend, {}, {}, false);
  ASSERT_TRUE(envelope);
  std::string all = envelopeJson(*envelope).dump() + envelopeText(*envelope);
  EXPECT_EQ(all.find("sk-secret-value"), std::string::npos);
  EXPECT_NE(all.find("ANTHROPIC_API_KEY"), std::string::npos);
  unsetenv("ANTHROPIC_API_KEY");
}

// The kernel line says which kernel a run boots: airlock's own once built,
// else Debian's (cached or still to download) with how to get the faster one.
TEST_F(EnvelopeTest, TheKernelLineNamesTheKernelARunBoots) {
  EXPECT_NE(describeBackend(cache(), {}).kernel.find("not built yet"), std::string::npos);
  EXPECT_NE(describeBackend(cache(), {}).kernel.find("airlock system kernel build"), std::string::npos);
  const std::string debian = cache() + "/assets/kernel-0123456789abcdef";
  ASSERT_TRUE(makeDirs(debian).has_value());
  ASSERT_TRUE(writeFileAtomic(debian + "/vmlinux", "elf").has_value());
  ASSERT_TRUE(writeFileAtomic(debian + "/release", "6.1.0-57-cloud-amd64\n").has_value());
  EXPECT_TRUE(describeBackend(cache(), {}).kernel.starts_with("6.1.0-57-cloud-amd64 (Debian's;"))
      << describeBackend(cache(), {}).kernel;
  const std::string own = cache() + "/assets/" + vm::guestKernelDirName(vm::guestKernelConfig());
  ASSERT_TRUE(makeDirs(own + "/modules").has_value());
  ASSERT_TRUE(writeFileAtomic(own + "/vmlinux", "elf").has_value());
  ASSERT_TRUE(writeFileAtomic(own + "/modules/load-order", "").has_value());
  ASSERT_TRUE(writeFileAtomic(own + "/release", "6.1.192-airlock\n").has_value());
  EXPECT_EQ(describeBackend(cache(), {}).kernel, "airlock's own 6.1.192-airlock");
}

// `airlock info --accel tcg` previews a forced TCG run even where KVM works.
TEST(DescribeBackend, FollowsTheAccelRequest) {
  vm::HostFacts kvmHost{true, true, false};
  const std::string noCache = "/nonexistent/airlock-cache";
  EXPECT_EQ(describeBackend(noCache, kvmHost).accel, "kvm");
  EXPECT_EQ(describeBackend(noCache, kvmHost, vm::AccelRequest::kTcg).accel, "tcg");
  EXPECT_EQ(describeBackend(noCache, vm::HostFacts{}, vm::AccelRequest::kAuto).accel, "tcg");
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
  EXPECT_EQ(j["workspace"]["shared"], "live directory, read-write (virtiofsd acting as its owner)");
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

/// The egress section `airlock info` shows, rebuilt from the policy `airlock
/// run` hands the firewall for the same settings (config::runEgressPolicy).
json egressFromPolicy(const egress::Policy& policy) {
  json hosts = json::array();
  for (const auto& h : policy.hosts) hosts.push_back({{"host", h.pattern}, {"ports", h.ports}});
  json ports = json::array();
  for (const auto& p : policy.hostPorts)
    ports.push_back({{"port", p.hostPort}, {"guest", "10.0.2.2:" + std::to_string(p.guestPort)}});
  return {{"profile", egress::profileName(policy.profile)}, {"enforced", true},
          {"any_host", policy.profile == egress::Profile::kPermissive}, {"hosts", hosts}, {"host_ports", ports}};
}

json egressShown(const json& j) {
  json hosts = json::array();
  for (const auto& h : j["egress"]["hosts"]) hosts.push_back({{"host", h["host"]}, {"ports", h["ports"]}});
  json ports = json::array();
  for (const auto& p : j["host_ports"]) ports.push_back({{"port", p["port"]}, {"guest", p["guest"]}});
  return {{"profile", j["egress"]["profile"]}, {"enforced", j["egress"]["enforced"]},
          {"any_host", j["egress"]["any_host"]}, {"hosts", hosts}, {"host_ports", ports}};
}

TEST_F(EnvelopeTest, EgressIsWhatRunEnforces) {
  writeFile("config/airlock/config.yaml",
            "allow_hosts: [\"git.example.com:8443\", \"*.corp.example\"]\nhost_ports: [11434]\n"
            "remove_hosts: [registry.npmjs.org]\n");
  for (const char* profile : {"standard", "locked", "permissive"}) {
    ConfigLayer flags;
    flags.egressProfile = parseEgressProfile(profile);
    flags.allowHosts = {"extra.example.org"};
    std::vector<egress::HostPort> flagPorts = {{5432, 15432}};
    auto effective = loadEffectiveConfig(userPath(), "claude-code", dir_->path() + "/workspace", flags);
    ASSERT_TRUE(effective);
    auto policy = runEgressPolicy(effective->agent, effective->resolved.settings, flagPorts);
    ASSERT_TRUE(policy) << policy.error().message;
    json j = info("claude-code", flags, RunPorts{flagPorts, {}});
    EXPECT_EQ(egressShown(j), egressFromPolicy(*policy)) << profile;
    EXPECT_EQ(j["egress"]["enforced"], true);
    EXPECT_EQ(j["host_ports"][0]["from"], "flag");
    EXPECT_EQ(j["host_ports"][1], (json{{"port", 11434}, {"guest", "10.0.2.2:11434"}, {"from", "user"}}));
    std::string text = envelopeText(*buildEnvelope(std::move(*effective), describeBackend(cache(), {}), {},
                                                   RunPorts{flagPorts, {{8080, 3000}}}, false));
    EXPECT_EQ(text.find("not enforced"), std::string::npos) << text;
    EXPECT_NE(text.find("enforced by the session firewall"), std::string::npos) << text;
    EXPECT_NE(text.find("127.0.0.1:5432 -> 10.0.2.2:15432"), std::string::npos) << text;
    EXPECT_NE(text.find("guest :3000 -> 127.0.0.1:8080"), std::string::npos) << text;
  }
}

TEST_F(EnvelopeTest, ImageSourcesAreLabelled) {
  auto view = [&](const std::string& config, const std::string& flag = "", const std::string& agent = "claude-code") {
    writeFile("config/airlock/config.yaml", config);
    auto effective = loadEffectiveConfig(userPath(), agent, dir_->path() + "/workspace", {});
    EXPECT_TRUE(effective) << effective.error().message;
    return describeImage(cache(), *effective, flag);
  };
  auto registry = view("image: ghcr.io/acme/agent:1\n");
  EXPECT_EQ(registry.source, ImageSource::kRegistry);
  EXPECT_EQ(registry.signature.find("local path"), std::string::npos) << registry.signature;
  EXPECT_TRUE(registry.problem.empty());

  auto custom = view("agents:\n  mine:\n    description: Mine\n    image: ghcr.io/acme/mine:2\n    command: [m]\n"
                     "    egress: {model_hosts: [api.example.com]}\n", "", "mine");
  EXPECT_EQ(custom.source, ImageSource::kRegistry);
  EXPECT_EQ(custom.reference, "ghcr.io/acme/mine:2");

  auto missing = view("image: " + dir_->path() + "/no-such-rootfs\n");
  EXPECT_EQ(missing.source, ImageSource::kLocalPath);
  EXPECT_NE(missing.problem.find("does not exist"), std::string::npos);
  ASSERT_TRUE(makeDirs(dir_->path() + "/rootfs"));
  auto present = view("image: " + dir_->path() + "/rootfs\n");
  EXPECT_EQ(present.source, ImageSource::kLocalPath);
  EXPECT_TRUE(present.problem.empty());

  auto flag = view("image: " + dir_->path() + "/rootfs\n", "docker.io/library/debian:12");
  EXPECT_EQ(flag.source, ImageSource::kRegistry);
  EXPECT_EQ(flag.reference, "docker.io/library/debian:12");

  auto recipe = view("");
  EXPECT_EQ(recipe.source, ImageSource::kRecipe);
  EXPECT_EQ(recipe.reference, "local:claude-code");

  // The text: a missing path is an error line, never "not built yet".
  auto effective = loadEffectiveConfig(userPath(), "claude-code", dir_->path() + "/workspace", {});
  ASSERT_TRUE(effective);
  auto e = buildEnvelope(std::move(*effective), describeBackend(cache(), {}), missing, {}, false);
  ASSERT_TRUE(e);
  std::string text = envelopeText(*e);
  std::string imageLine = text.substr(text.find("  image"));
  imageLine = imageLine.substr(0, imageLine.find('\n'));
  EXPECT_EQ(imageLine.find("not built yet"), std::string::npos) << imageLine;
  EXPECT_NE(text.find("error: image"), std::string::npos) << text;
}

}  // namespace
}  // namespace airlock::preflight
