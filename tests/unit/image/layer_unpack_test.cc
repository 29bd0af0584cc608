#include "image/oci/layer_unpack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "support/tar_builder.h"

namespace airlock::image::oci {
namespace {

using test::makeTar;
using test::TarEntry;

class LayerUnpack : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = TempDir::create("/tmp", "airlock-layer-test-");
    ASSERT_TRUE(t);
    tmp_.emplace(std::move(*t));
    root_ = tmp_->path() + "/root";
    ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0);
    rootFd_.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  Result<LayerStats> apply(const std::string& tar, int n = 1) {
    const std::string blob = tmp_->path() + "/layer" + std::to_string(n);
    std::ofstream(blob, std::ios::binary) << tar;
    return applyLayer(rootFd_.get(), blob, "layer " + std::to_string(n));
  }
  bool exists(const std::string& rel) {
    struct stat st {};
    return ::lstat((root_ + "/" + rel).c_str(), &st) == 0;
  }
  std::string read(const std::string& rel) {
    auto r = readFile(root_ + "/" + rel);
    return r ? *r : "<missing>";
  }
  std::optional<TempDir> tmp_;
  std::string root_;
  Fd rootFd_;
};

TEST_F(LayerUnpack, AppliesFilesDirsLinksInEachCompression) {
  for (std::string c : {"none", "gzip", "zstd"}) {
    std::string sub = "d-" + c;
    auto r = apply(makeTar({{sub + "/", 'd', "", "", 0755},
                            {sub + "/f", 'f', "hello " + c, "", 0640},
                            {sub + "/l", 'l', "", "f"},
                            {sub + "/h", 'h', "", sub + "/f"},
                            {sub + "/null", 'c', ""}},
                           c));
    ASSERT_TRUE(r) << c << ": " << r.error().message;
    EXPECT_EQ(r->skippedSpecial, 1u);
    EXPECT_EQ(read(sub + "/f"), "hello " + c);
    EXPECT_EQ(read(sub + "/l"), "hello " + c);
    struct stat a {}, b {};
    ASSERT_EQ(::stat((root_ + "/" + sub + "/f").c_str(), &a), 0);
    ASSERT_EQ(::stat((root_ + "/" + sub + "/h").c_str(), &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
    EXPECT_EQ(a.st_mode & 07777, 0640u);
    EXPECT_FALSE(exists(sub + "/null"));
  }
}

TEST_F(LayerUnpack, WhiteoutsAndOpaqueDirsHideLowerLayers) {
  ASSERT_TRUE(apply(makeTar({{"etc/", 'd'}, {"etc/keep", 'f', "k"}, {"etc/gone", 'f', "g"}, {"opt/", 'd'},
                             {"opt/old1", 'f', "1"}, {"opt/sub/", 'd'}, {"opt/sub/old2", 'f', "2"}}),
                    1));
  auto r = apply(makeTar({{"etc/.wh.gone", 'f'}, {"opt/new", 'f', "n"}, {"opt/.wh..wh..opq", 'f'}}), 2);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(read("etc/keep"), "k");
  EXPECT_FALSE(exists("etc/gone"));
  EXPECT_FALSE(exists("etc/.wh.gone"));
  EXPECT_FALSE(exists("opt/old1"));
  EXPECT_FALSE(exists("opt/sub"));
  EXPECT_EQ(read("opt/new"), "n");
  EXPECT_FALSE(exists("opt/.wh..wh..opq"));
}

TEST_F(LayerUnpack, LaterLayerReplacesTypes) {
  ASSERT_TRUE(apply(makeTar({{"x/", 'd'}, {"x/inner", 'f', "i"}, {"y", 'f', "file"}}), 1));
  ASSERT_TRUE(apply(makeTar({{"x", 'f', "now a file"}, {"y/", 'd'}, {"y/z", 'f', "z"}}), 2));
  EXPECT_EQ(read("x"), "now a file");
  EXPECT_EQ(read("y/z"), "z");
}

TEST_F(LayerUnpack, RefusesTraversalNamingLayerAndEntry) {
  auto r = apply(makeTar({{"../../etc/x", 'f', "pwned"}}), 3);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("layer 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(".."), std::string::npos) << r.error().message;
  EXPECT_FALSE(apply(makeTar({{"/abs", 'f', "x"}}), 4));
}

TEST_F(LayerUnpack, RefusesWritingThroughASymlinkOfTheSameLayer) {
  const std::string outside = tmp_->path() + "/outside";
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  auto r = apply(makeTar({{"evil", 'l', "", outside}, {"evil/planted", 'f', "x"}}), 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("evil/planted"), std::string::npos) << r.error().message;
  EXPECT_FALSE(exists("../outside/planted"));
  struct stat st {};
  EXPECT_NE(::lstat((outside + "/planted").c_str(), &st), 0);
}

TEST_F(LayerUnpack, SymlinkOfALowerLayerResolvesInsideTheTree) {
  const std::string outside = tmp_->path() + "/outside";
  ASSERT_EQ(::mkdir(outside.c_str(), 0755), 0);
  ASSERT_TRUE(apply(makeTar({{"evil", 'l', "", outside}, {"up", 'l', "", "../../.."}}), 1));
  // "evil" points at a host path, which inside the tree does not exist: refused.
  auto r = apply(makeTar({{"evil/planted", 'f', "x"}}), 2);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("layer 2"), std::string::npos) << r.error().message;
  struct stat st {};
  EXPECT_NE(::lstat((outside + "/planted").c_str(), &st), 0) << "wrote outside the tree";
  // "up" climbs above the root, which stops at the root.
  auto up = apply(makeTar({{"up/escaped", 'f', "y"}}), 3);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(read("escaped"), "y");
  EXPECT_NE(::lstat((tmp_->path() + "/escaped").c_str(), &st), 0);
}

TEST_F(LayerUnpack, RefusesHardLinkToOutsideOrLaterEntries) {
  EXPECT_FALSE(apply(makeTar({{"h", 'h', "", "../../etc/passwd"}}), 1));
  EXPECT_FALSE(apply(makeTar({{"h", 'h', "", "later"}, {"later", 'f', "x"}}), 2));
}

// The diff_id is the digest of the uncompressed tar, whatever the compression.
TEST_F(LayerUnpack, ReportsTheDigestOfTheUncompressedStream) {
  const std::vector<TarEntry> entries = {{"a/", 'd', "", "", 0755}, {"a/f", 'f', std::string(300000, 'x')}};
  const std::string expected = "sha256:" + sha256Hex(makeTar(entries, "none"));
  int n = 0;
  for (std::string c : {"none", "gzip", "zstd"}) {
    auto r = apply(makeTar(entries, c), ++n);
    ASSERT_TRUE(r) << c << ": " << r.error().message;
    EXPECT_EQ(r->diffId, expected) << c;
  }
}

// A blob whose compressed stream breaks off is refused, naming the layer.
TEST_F(LayerUnpack, RefusesATruncatedCompressedStream) {
  std::string gz = makeTar({{"f", 'f', std::string(1 << 20, 'y')}}, "gzip");
  auto r = apply(gz.substr(0, gz.size() / 2), 4);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("layer 4"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace airlock::image::oci
