// `image save` / `image load`: OCI image layout tars. Round trip through the
// store, skopeo pushing a saved tar to the registry (and writing one airlock
// loads), and untrusted archives (tampered blob, path traversal, foreign
// entries, layer not matching its diff_id) refused with nothing left behind.

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "image/oci/image_archive.h"
#include "image/oci/image_pull.h"
#include "local_registry.h"
#include "support/tar_builder.h"

namespace airlock::image::oci {
namespace {

using test::kGzipLayer;

using test::busyboxLayer;
using test::LocalRegistry;
using test::makeTar;
using test::OciLayout;

std::string slurp(const std::string& path) {
  auto r = readFile(path, 256 << 20);
  return r ? *r : "";
}

class ImageArchive : public test::RegistryFixture {
 protected:
  void SetUp() override {
    RegistryFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    a_ = std::make_unique<ImageStore>(tmp_->path() + "/store-a");
    b_ = std::make_unique<ImageStore>(tmp_->path() + "/store-b");
  }
  Result<PulledImage> pull(const ImageStore& store, const std::string& repoTag) {
    PullOptions o;
    o.policy = PullPolicy::Always;
    return pullImage(store, ref(repoTag), o);
  }
  // Pushes a two-layer image as repo:tag and pulls it into store A.
  PulledImage pushAndPull(const std::string& repoTag) {
    auto m = layout_->addImage({layout_->addBlob(busyboxLayer(), kGzipLayer),
                                layout_->addBlob(makeTar({{"etc/motd", 'f', "saved and loaded\n"}}, "zstd"),
                                                 "application/vnd.oci.image.layer.v1.tar+zstd")});
    const std::string tag = repoTag.substr(repoTag.find(':') + 1);
    layout_->tag(m, tag);
    layout_->push(*registry_, repoTag.substr(0, repoTag.find(':')), tag);
    auto img = pull(*a_, repoTag);
    EXPECT_TRUE(img) << img.error().message;
    return *img;
  }
  Result<std::vector<StoredRef>> load(const ImageStore& store, const std::string& tar, const std::string& name = "") {
    LoadOptions o;
    o.name = name;
    return loadImageArchive(store, tar, o);
  }
  std::vector<std::string> files(const ImageStore& store, const std::string& sub) {
    return namesIn(store.root() + "/" + sub);
  }
  void expectNothingLoaded(const ImageStore& store) {
    EXPECT_TRUE(files(store, "images").empty());
    auto blobs = files(store, "blobs/sha256");
    EXPECT_TRUE(blobs.empty()) << blobs.size() << " blobs left, e.g. " << blobs.front();
    auto refs = store.list();
    EXPECT_TRUE(!refs || refs->empty());
  }
  // A layout tar built by hand from `entries` (for malformed archives).
  std::string writeTar(const std::vector<test::TarEntry>& entries) {
    static int n = 0;
    std::string path = tmp_->path() + "/hand-" + std::to_string(++n) + ".tar";
    std::ofstream(path, std::ios::binary) << makeTar(entries);
    return path;
  }
  // The entries of a valid single-image layout from `layout_`'s files.
  std::vector<test::TarEntry> layoutEntries(const Descriptor& top) {
    std::string index = R"({"schemaVersion":2,"manifests":[{"mediaType":")" + top.mediaType + R"(","digest":")" +
                        top.digest + R"(","size":)" + std::to_string(top.size) +
                        R"(,"annotations":{"org.opencontainers.image.ref.name":"example.test/hand/made:v1"}}]})";
    std::vector<test::TarEntry> e = {{"oci-layout", 'f', R"({"imageLayoutVersion":"1.0.0"})"},
                                     {"index.json", 'f', index},
                                     {"blobs/", 'd', "", "", 0755},
                                     {"blobs/sha256/", 'd', "", "", 0755}};
    auto ls = runCommand({"ls", layout_->dir() + "/blobs/sha256"});
    std::istringstream in(ls->stdoutText);
    for (std::string hex; std::getline(in, hex);)
      e.push_back({"blobs/sha256/" + hex, 'f', slurp(layout_->dir() + "/blobs/sha256/" + hex)});
    return e;
  }
  std::unique_ptr<ImageStore> a_, b_;
};

TEST_F(ImageArchive, SaveThenLoadRoundTrips) {
  auto img = pushAndPull("team/rt:v1");
  const std::string tar = tmp_->path() + "/rt.tar";
  auto saved = saveImage(*a_, ref("team/rt:v1"), tar);
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_EQ(saved->manifestDigest, img.record.manifestDigest);
  EXPECT_EQ(saved->blobs, 4u);  // manifest, config, two layers
  auto listing = runCommand({"tar", "-tf", tar});
  ASSERT_TRUE(listing);
  for (const auto& name : {"oci-layout", "index.json", "blobs/sha256/"})
    EXPECT_NE(listing->stdoutText.find(name), std::string::npos) << listing->stdoutText;
  for (const auto& b : img.record.blobs)
    EXPECT_NE(listing->stdoutText.find("blobs/sha256/" + b.substr(7)), std::string::npos) << b;

  auto loaded = load(*b_, tar);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].name, registry_->host() + "/team/rt:v1");
  EXPECT_EQ((*loaded)[0].manifestDigest, img.record.manifestDigest);
  auto rec = b_->readRecord(img.record.manifestDigest);
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_EQ(rec->configDigest, img.record.configDigest);
  EXPECT_EQ(rec->config.cmd, img.record.config.cmd);
  // Same rootfs content: the erofs images hold the same files.
  auto x = tmp_->path() + "/x";
  ASSERT_TRUE(runChecked({"fsck.erofs", "--extract=" + x, b_->erofsPath(img.record.manifestDigest)}));
  EXPECT_EQ(slurp(x + "/etc/motd"), "saved and loaded\n");
  // Loading again is idempotent; --name stores it under another name too.
  auto again = load(*b_, tar, "example.test/renamed:v9");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)[0].name, "example.test/renamed:v9");
  EXPECT_TRUE(b_->findRef(*parseImageRef("example.test/renamed:v9")));
  // Saving again gives the same bytes (reproducible tar).
  const std::string tar2 = tmp_->path() + "/rt2.tar";
  ASSERT_TRUE(saveImage(*b_, ref("team/rt:v1"), tar2));
  EXPECT_EQ(sha256Hex(slurp(tar)), sha256Hex(slurp(tar2)));
}

TEST_F(ImageArchive, SkopeoPushesASavedTarAndWritesOneAirlockLoads) {
  auto img = pushAndPull("team/src:v1");
  const std::string tar = tmp_->path() + "/src.tar";
  ASSERT_TRUE(saveImage(*a_, ref("team/src:v1"), tar));
  auto pushed = runCommand({"skopeo", "copy", "--quiet", "--dest-tls-verify=false", "oci-archive:" + tar,
                            "docker://" + registry_->host() + "/team/copied:v2"});
  ASSERT_TRUE(pushed);
  ASSERT_EQ(pushed->exitCode, 0) << pushed->stderrText;
  auto back = pull(*b_, "team/copied:v2");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->record.manifestDigest, img.record.manifestDigest);
  EXPECT_EQ(back->record.configDigest, img.record.configDigest);
  // The other direction: a tar skopeo wrote from the registry loads.
  const std::string fromSkopeo = tmp_->path() + "/skopeo.tar";
  auto written = runCommand({"skopeo", "copy", "--quiet", "--src-tls-verify=false",
                             "docker://" + registry_->host() + "/team/copied:v2", "oci-archive:" + fromSkopeo});
  ASSERT_TRUE(written);
  ASSERT_EQ(written->exitCode, 0) << written->stderrText;
  ImageStore c(tmp_->path() + "/store-c");
  auto loaded = load(c, fromSkopeo, "example.test/from-skopeo:v1");
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_TRUE(pathExists(c.erofsPath((*loaded)[0].manifestDigest)));
}

TEST_F(ImageArchive, TamperedBlobIsRefusedAndNothingIsKept) {
  auto m = layout_->addImage({layout_->addBlob(busyboxLayer(), kGzipLayer)});
  auto entries = layoutEntries(m);
  for (auto& e : entries)
    if (e.name.starts_with("blobs/sha256/") && e.content.size() > 10000) e.content[e.content.size() / 2] ^= 0x5a;  // the layer
  auto r = load(*b_, writeTar(entries));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kImage);
  EXPECT_NE(r.error().message.find("does not match its name"), std::string::npos) << r.error().message;
  expectNothingLoaded(*b_);
  // The untampered layout loads.
  auto ok = load(*b_, writeTar(layoutEntries(m)));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ((*ok)[0].name, "example.test/hand/made:v1");
}

TEST_F(ImageArchive, UnsafeOrForeignEntriesAreRefusedWithTheHostUntouched) {
  auto m = layout_->addImage({layout_->addBlob(busyboxLayer(), kGzipLayer)});
  const std::string victim = tmp_->path() + "/victim";
  ASSERT_EQ(::mkdir(victim.c_str(), 0755), 0);
  struct Case {
    std::vector<test::TarEntry> extra;
    std::string expect;
  } cases[] = {
      {{{"../../../../tmp/airlock-archive-escape", 'f', "x"}}, ".."},
      {{{"/etc/airlock-archive-abs", 'f', "x"}}, "airlock-archive-abs"},
      {{{"blobs/sha256/evil", 'l', "", victim}}, "not a regular file"},
      {{{"run.sh", 'f', "#!/bin/sh"}}, "not part of an OCI image layout"},
      {{{"blobs/sha256/" + std::string(64, 'a'), 'h', "", "index.json"}}, "not a regular file"},
  };
  for (const auto& c : cases) {
    auto entries = layoutEntries(m);
    entries.insert(entries.begin() + 2, c.extra.begin(), c.extra.end());
    auto r = load(*b_, writeTar(entries));
    ASSERT_FALSE(r) << c.expect;
    EXPECT_EQ(r.error().code, exit_code::kImage);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
    expectNothingLoaded(*b_);
  }
  EXPECT_NE(::access("/tmp/airlock-archive-escape", F_OK), 0);
  EXPECT_NE(::access("/etc/airlock-archive-abs", F_OK), 0);
  EXPECT_EQ(runCommand({"ls", "-A", victim})->stdoutText, "");
}

TEST_F(ImageArchive, LayerNotMatchingItsDiffIdIsRefused) {
  auto layer = layout_->addBlob(busyboxLayer(), kGzipLayer);
  auto m = layout_->addImage({layer}, "amd64", {"/bin/sh"}, {"sha256:" + std::string(64, 'b')});
  auto r = load(*b_, writeTar(layoutEntries(m)));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kImage);
  EXPECT_NE(r.error().message.find("layer 1 of 1 (" + layer.digest + ")"), std::string::npos) << r.error().message;
  expectNothingLoaded(*b_);
}

TEST_F(ImageArchive, CliSavesAndLoads) {
  pushAndPull("team/cli:v1");
  const std::string tar = tmp_->path() + "/cli.tar";
  ::setenv("AIRLOCK_CACHE_DIR", tmp_->path().c_str(), 1);  // store at AIRLOCK_CACHE_DIR/oci
  ASSERT_EQ(::rename(a_->root().c_str(), (tmp_->path() + "/oci").c_str()), 0);
  auto saved = runCommand({AIRLOCK_BINARY, "image", "save", registry_->host() + "/team/cli:v1", "-o", tar});
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->exitCode, 0) << saved->stderrText;
  ASSERT_EQ(::rename((tmp_->path() + "/oci").c_str(), (tmp_->path() + "/oci-old").c_str()), 0);
  auto loaded = runCommand({AIRLOCK_BINARY, "image", "load", "-q", "-i", tar});
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->exitCode, 0) << loaded->stderrText;
  EXPECT_NE(loaded->stdoutText.find(registry_->host() + "/team/cli:v1 sha256:"), std::string::npos) << loaded->stdoutText;
  auto bad = runCommand({AIRLOCK_BINARY, "image", "load", "-i", writeTar({{"oci-layout", 'f', "{}"}})});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->exitCode, exit_code::kImage) << bad->stderrText;
  auto missing = runCommand({AIRLOCK_BINARY, "image", "save", "example.test/none:v1", "-o", tmp_->path() + "/none.tar"});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exitCode, exit_code::kImage) << missing->stderrText;
  ::unsetenv("AIRLOCK_CACHE_DIR");
}

}  // namespace
}  // namespace airlock::image::oci
