// What `airlock agents --json` and the `airlock image ls` footer say.

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "agents/registry.h"
#include "cli/agents.h"
#include "cli/image_store_cmd.h"
#include "common/paths.h"
#include "image/recipe.h"

namespace airlock::cli {
namespace {

// The config and `airlock info --json` call it vcpus; so does `agents --json`.
TEST(AgentsJson, UsesVcpusLikeTheConfig) {
  auto registry = agents::AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  auto list = agentsListJson(registry->all(), "/nonexistent-cache");
  ASSERT_FALSE(list.empty());
  for (const auto& a : list) {
    EXPECT_TRUE(a.contains("vcpus")) << a.dump();
    EXPECT_FALSE(a.contains("cpus")) << a.dump();
    EXPECT_GE(a["vcpus"].get<int>(), 1);
  }
}

// `airlock agents --json`: how one signs in, the default model hosts, and
// the image's size once it is built (null before).
TEST(AgentsJson, SaysTheLoginsTheHostsAndTheImageSize) {
  auto registry = agents::AgentRegistry::builtin();
  ASSERT_TRUE(registry);
  TempDir cache = *TempDir::create("/tmp", "agents-cache-");
  auto grok = registry->find("grok");
  ASSERT_TRUE(grok);
  const std::string image = image::agentImagePath(cache.path(), *grok);
  ASSERT_TRUE(makeDirs(image.substr(0, image.rfind('/'))));
  { std::ofstream(image) << std::string(4096, 'x'); }
  std::map<std::string, nlohmann::json> byName;
  for (const auto& a : agentsListJson(registry->all(), cache.path())) byName[a["name"]] = a;
  EXPECT_EQ(byName["grok"]["image_bytes"], 4096);
  EXPECT_TRUE(byName["codex"]["image_bytes"].is_null());
  EXPECT_EQ(byName["grok"]["logins"], nlohmann::json::array({"api-key"}));
  EXPECT_EQ(byName["grok"]["model_hosts"], nlohmann::json::array({"api.x.ai"}));
  EXPECT_EQ(byName["claude-code"]["logins"], nlohmann::json::array({"api-key", "account"}));
  EXPECT_EQ(byName["opencode"]["logins"], nlohmann::json::array({"api-key", "account-in-vm"}));
}

image::oci::ImageSummary summary(const std::string& name, const std::string& digest, uint64_t bytes) {
  image::oci::ImageSummary s;
  s.ref.name = name;
  s.ref.manifestDigest = digest;
  s.erofsBytes = bytes;
  return s;
}

// Two tags of one image are one image (its size counted once), two references.
TEST(ImageListSummary, CountsImagesAndReferencesApart) {
  EXPECT_EQ(imageListSummary({summary("docker.io/library/busybox:1", "sha256:aa", 1 << 20),
                              summary("docker.io/library/busybox:latest", "sha256:aa", 1 << 20)}),
            "1 image, 2 references, 1.0 MiB of root images");
  EXPECT_EQ(imageListSummary({summary("a:1", "sha256:aa", 1 << 20), summary("b:1", "sha256:bb", 2 << 20)}),
            "2 images, 2 references, 3.0 MiB of root images");
  EXPECT_EQ(imageListSummary({summary("a:1", "sha256:aa", 1 << 20)}), "1 image, 1 reference, 1.0 MiB of root images");
  EXPECT_EQ(imageListSummary({}), "0 images, 0 references, 0 B of root images");
}

}  // namespace
}  // namespace airlock::cli
