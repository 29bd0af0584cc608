// `airlock image save IMAGE -o -` streams the tar to stdout, like docker save.

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "image/oci/image_archive.h"
#include "support/scratch.h"

namespace airlock::image::oci {
namespace {

void writeFile(const std::string& path, const std::string& data) {
  (void)std::system(("mkdir -p $(dirname " + path + ")").c_str());
  std::ofstream(path, std::ios::binary) << data;
}

TEST(ImageSave, DashWritesTheTarToStdoutAndNoFileNamedDash) {
  TempDir scratch = airlock::test::scratchDir("airlock-save-");
  const std::string root = scratch.path();
  ImageStore store(root + "/store");
  ASSERT_TRUE(store.ensureLayout());
  const std::string config = R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}})";
  const std::string layer = "not really a layer";
  const std::string configDigest = "sha256:" + sha256Hex(config), layerDigest = "sha256:" + sha256Hex(layer);
  const std::string manifest =
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":)"
      R"("application/vnd.oci.image.config.v1+json","digest":")" + configDigest + R"(","size":)" +
      std::to_string(config.size()) + R"(},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip",)"
      R"("digest":")" + layerDigest + R"(","size":)" + std::to_string(layer.size()) + "}]}";
  const std::string manifestDigest = "sha256:" + sha256Hex(manifest);
  writeFile(store.blobPath(configDigest), config);
  writeFile(store.blobPath(layerDigest), layer);
  writeFile(store.blobPath(manifestDigest), manifest);
  writeFile(store.erofsPath(manifestDigest), "erofs");
  ASSERT_TRUE(store.writeRef({"docker.io/library/busybox:1", manifestDigest, 1}));
  auto ref = parseImageRef("busybox:1");
  ASSERT_TRUE(ref);

  const std::string out = root + "/stdout.tar";
  int saved = ::dup(STDOUT_FILENO);
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ::dup2(fd, STDOUT_FILENO);
  ::close(fd);
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(::chdir(root.c_str()), 0);
  auto r = saveImage(store, *ref, "-");
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  ASSERT_EQ(::chdir(cwd), 0);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->manifestDigest, manifestDigest);
  EXPECT_EQ(r->blobs, 3u);
  struct stat st {};
  EXPECT_NE(::stat((root + "/-").c_str(), &st), 0) << "a file named - was written";
  std::ifstream in(out, std::ios::binary);
  std::stringstream tar;
  tar << in.rdbuf();
  EXPECT_NE(tar.str().find("index.json"), std::string::npos);
  EXPECT_NE(tar.str().find("blobs/sha256/" + manifestDigest.substr(7)), std::string::npos);
  EXPECT_NE(tar.str().find(layer), std::string::npos);
}

}  // namespace
}  // namespace airlock::image::oci
