#include "image/recipe.h"

#include <gtest/gtest.h>

#include "image/base_rootfs.h"
#include "image/npm_packages.h"

namespace airlock::image {
namespace {

agents::AgentSpec demoSpec() {
  agents::AgentSpec spec;
  spec.name = "demo";
  spec.image = {.npmPackage = "@demo/cli", .version = "1.2.3", .binary = "bin/demo", .installAs = "demo"};
  spec.command = {"demo"};
  return spec;
}

TEST(RecipeDigest, StableForTheSameRecipe) {
  EXPECT_EQ(recipeDigest(demoSpec()), recipeDigest(demoSpec()));
  EXPECT_EQ(recipeDigest(demoSpec()).size(), 64u);
}

TEST(RecipeDigest, ChangesWithTheImageRecipe) {
  const std::string base = recipeDigest(demoSpec());
  auto changed = [](auto edit) {
    auto spec = demoSpec();
    edit(spec);
    return recipeDigest(spec);
  };
  EXPECT_NE(changed([](auto& s) { s.image.version = "1.2.4"; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.nativePackage = "@demo/cli-linux-x64"; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.nativeVersion = "1.2.3-linux"; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.binary = "bin/other"; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.installAs = "other"; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.node = true; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.npmPackage = "demo"; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.archive = "linux-x64"; }), base);
  EXPECT_NE(changed([](auto& s) { s.image.pypiPackage = "demo"; }), base);
}

// A PyPI agent's image starts from a base with python3; the others keep
// the common base (and their digests).
TEST(RecipeDigest, APypiAgentsBaseAddsPython) {
  auto spec = demoSpec();
  EXPECT_TRUE(baseExtraPackages(spec.image).empty());
  spec.image = {.version = "0.19.0", .binary = "hermes", .installAs = "hermes", .pypiPackage = "hermes-agent"};
  EXPECT_EQ(baseExtraPackages(spec.image), (std::vector<std::string>{"python3", "python3-venv"}));
}

TEST(RecipeDigest, McpServerPackagesChangeItOnlyWhenThereAreAny) {
  const std::string base = recipeDigest(demoSpec());
  auto withMcp = [](std::map<std::string, std::string> packages) {
    auto spec = demoSpec();
    spec.image.mcpPackages = std::move(packages);
    return recipeDigest(spec);
  };
  EXPECT_EQ(withMcp({}), base);
  const std::string fs = withMcp({{"fs", "@m/fs@1.0.0"}});
  EXPECT_NE(fs, base);
  EXPECT_NE(withMcp({{"fs", "@m/fs@1.0.1"}}), fs);
  EXPECT_NE(withMcp({{"files", "@m/fs@1.0.0"}}), fs);
  EXPECT_EQ(withMcp({{"fs", "@m/fs@1.0.0"}}), fs);
}

// An MCP server's program, from the package.json npm installed on this
// host: the forms npm allows, and nothing that leaves the package.
TEST(NpmPackageBin, TheProgramTheManifestNames) {
  EXPECT_EQ(*npmPackageBin(R"({"bin": "dist/index.js"})", "@m/fs"), "dist/index.js");
  EXPECT_EQ(*npmPackageBin(R"({"bin": "./dist/index.js"})", "@m/fs"), "dist/index.js");
  EXPECT_EQ(*npmPackageBin(R"({"bin": {"mcp-server-fs": "dist/index.js"}})", "@m/fs"), "dist/index.js");
  EXPECT_EQ(*npmPackageBin(R"({"bin": {"fs": "bin/fs.js", "other": "bin/o.js"}})", "@m/fs"), "bin/fs.js");
  for (const char* bad : {R"({"bin": {"a": "a.js", "b": "b.js"}})", R"({})", R"({"bin": 3})", R"([1])", R"(oops)",
                          R"({"bin": "../../../etc/passwd"})", R"({"bin": "/etc/passwd"})",
                          R"({"bin": "dist/../../x.js"})", R"({"bin": "dist/$(id).js"})", R"({"bin": "dist/a b.js"})",
                          R"({"bin": "it's.js"})", R"({"bin": ""})", R"({"bin": "dist//x.js"})"}) {
    auto bin = npmPackageBin(bad, "@m/fs");
    EXPECT_FALSE(bin) << bad << " gave " << (bin ? *bin : "");
  }
}

TEST(RecipeDigest, IgnoresRunTimeFields) {
  const std::string base = recipeDigest(demoSpec());
  auto changed = [](auto edit) {
    auto spec = demoSpec();
    edit(spec);
    return recipeDigest(spec);
  };
  EXPECT_EQ(changed([](auto& s) { s.command = {"demo", "run"}; }), base);
  EXPECT_EQ(changed([](auto& s) { s.env["A"] = "1"; }), base);
  EXPECT_EQ(changed([](auto& s) { s.memoryMib = 8192; }), base);
  EXPECT_EQ(changed([](auto& s) { s.homeFiles["x"] = "y"; }), base);
  EXPECT_EQ(changed([](auto& s) { s.description = "other"; }), base);
}

TEST(RecipeDigest, ImagePathIsUnderImagesDir) {
  const std::string cache = "/tmp/airlock-cache-test";
  EXPECT_EQ(agentImagePath(cache, demoSpec()), cache + "/images/" + recipeDigest(demoSpec()) + ".erofs");
  EXPECT_EQ(baseTarballPath(imagesDir(cache), {}), cache + "/images/base-" + baseDigest({}) + ".tar");
}

TEST(BaseRecipe, PackagesAndDigest) {
  EXPECT_EQ(baseDigest({}), baseDigest({}));
  EXPECT_NE(baseDigest({"python3"}), baseDigest({}));
  for (const char* p : {"ca-certificates", "git", "curl", "ripgrep", "procps", "passwd", "openssh-client"}) {
    EXPECT_NE(std::find(basePackages().begin(), basePackages().end(), p), basePackages().end()) << p;
  }
}

TEST(NpmTarballName, FlattensScopes) {
  EXPECT_EQ(npmTarballName("@anthropic-ai/claude-code-linux-x64", "2.1.332"),
            "anthropic-ai+claude-code-linux-x64@2.1.332.tgz");
  EXPECT_EQ(npmTarballName("opencode-linux-x64", "1.18.33"), "opencode-linux-x64@1.18.33.tgz");
}

}  // namespace
}  // namespace airlock::image
