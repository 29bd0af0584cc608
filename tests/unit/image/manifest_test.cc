#include "image/oci/manifest.h"

#include <gtest/gtest.h>

namespace airlock::image::oci {
namespace {

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');
const std::string kC = "sha256:" + std::string(64, 'c');

TEST(Manifest, ParsesOciManifest) {
  std::string body = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
    "config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" + kA + R"(","size":12},
    "layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+zstd","digest":")" + kB + R"(","size":34}]})";
  auto m = parseManifest(body, "");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_FALSE(m->isIndex);
  EXPECT_EQ(m->config.digest, kA);
  ASSERT_EQ(m->layers.size(), 1u);
  EXPECT_EQ(m->layers[0].size, 34u);
  EXPECT_EQ(*layerCompression(m->layers[0].mediaType), LayerCompression::Zstd);
}

TEST(Manifest, DockerListPicksPlatformAndVariant) {
  std::string body = R"({"schemaVersion":2,"manifests":[
    {"mediaType":"application/vnd.docker.distribution.manifest.v2+json","digest":")" + kA + R"(","size":1,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}},
    {"mediaType":"application/vnd.docker.distribution.manifest.v2+json","digest":")" + kB + R"(","size":1,"platform":{"os":"linux","architecture":"amd64"}},
    {"mediaType":"application/vnd.docker.distribution.manifest.v2+json","digest":")" + kC + R"(","size":1,"platform":{"os":"linux","architecture":"arm","variant":"v7"}}]})";
  auto idx = parseManifest(body, std::string(kDockerList) + "; charset=utf-8");
  ASSERT_TRUE(idx) << idx.error().message;
  EXPECT_TRUE(idx->isIndex);
  EXPECT_EQ(selectPlatform(*idx, Platform{})->digest, kB);
  EXPECT_EQ(selectPlatform(*idx, *parsePlatform("linux/arm/v7"))->digest, kC);
  auto missing = selectPlatform(*idx, *parsePlatform("linux/s390x"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("linux/arm64/v8"), std::string::npos);
}

TEST(Manifest, RefusesBadDigestsAndTypes) {
  EXPECT_FALSE(parseManifest(R"({"manifests":[{"digest":"sha256:../../x","size":1}]})", kOciIndex));
  EXPECT_FALSE(parseManifest(R"({"schemaVersion":1,"mediaType":"application/vnd.docker.distribution.manifest.v1+json"})", ""));
  EXPECT_FALSE(parseManifest("not json", ""));
  EXPECT_FALSE(parseManifest(R"({"config":{"digest":")" + kA + R"(","size":-1},"layers":[]})", kOciManifest));
  EXPECT_FALSE(layerCompression("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"));
  EXPECT_FALSE(parsePlatform("amd64"));
}

TEST(Manifest, ParsesImageConfig) {
  auto c = parseImageConfig(R"({"architecture":"amd64","os":"linux","config":{"User":"app:staff","Env":["A=1"],
    "Entrypoint":["/bin/tini","--"],"Cmd":["serve"],"WorkingDir":"/srv"}})");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->user, "app:staff");
  EXPECT_EQ(c->entrypoint.size(), 2u);
  EXPECT_EQ(c->cmd[0], "serve");
  EXPECT_EQ(c->workingDir, "/srv");
  EXPECT_FALSE(parseImageConfig(R"({"config":{"Env":"A=1"}})"));
}

// rootfs.diff_ids are read in order; a malformed one refuses the config.
TEST(Manifest, ConfigDiffIds) {
  const std::string a = "sha256:" + std::string(64, 'a'), b = "sha256:" + std::string(64, 'b');
  auto c = parseImageConfig(R"({"os":"linux","rootfs":{"type":"layers","diff_ids":[")" + a + R"(",")" + b + R"("]}})");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->diffIds, (std::vector<std::string>{a, b}));
  EXPECT_TRUE(parseImageConfig(R"({"os":"linux"})")->diffIds.empty());
  auto bad = parseImageConfig(R"({"rootfs":{"diff_ids":["sha256:../../x"]}})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("diff_id"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parseImageConfig(R"({"rootfs":{"diff_ids":"sha256:x"}})"));
  EXPECT_FALSE(parseImageConfig(R"({"rootfs":[]})"));
}

}  // namespace
}  // namespace airlock::image::oci
