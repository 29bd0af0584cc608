// Pulls from a real registry (docker-registry on loopback, plain HTTP) with
// images pushed by skopeo from OCI layouts built here.

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "image/oci/image_pull.h"
#include "image/oci/image_store.h"
#include "local_registry.h"
#include "support/tar_builder.h"

namespace airlock::image::oci {
namespace {

using test::kGzipLayer;
using test::kZstdLayer;
using test::kTarLayer;

using test::busyboxLayer;
using test::LocalRegistry;
using test::makeTar;
using test::OciLayout;

class RegistryTest : public test::RegistryFixture {
 protected:
  void SetUp() override {
    RegistryFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    store_ = std::make_unique<ImageStore>(tmp_->path() + "/store");
  }
  Result<PulledImage> pull(const std::string& repoTag, PullPolicy policy = PullPolicy::Missing, Platform p = {}) {
    PullOptions o;
    o.policy = policy;
    o.platform = p;
    return pullImage(*store_, ref(repoTag), o);
  }
  // Pushes a one-layer busybox image as repo:tag; returns its manifest descriptor.
  Descriptor pushBusybox(const std::string& repo, const std::string& tag) {
    auto m = layout_->addImage({layout_->addBlob(busyboxLayer(), kGzipLayer)});
    layout_->tag(m, tag);
    layout_->push(*registry_, repo, tag);
    return m;
  }
  // Extracts the built erofs image (fsck.erofs) and returns the directory.
  std::string extract(const PulledImage& img) {
    std::string dir = tmp_->path() + "/x-" + img.record.manifestDigest.substr(7, 12);
    EXPECT_TRUE(runChecked({"fsck.erofs", "--extract=" + dir, img.erofsPath}));
    return dir;
  }
  std::vector<std::string> storeFiles(const std::string& sub) { return namesIn(store_->root() + "/" + sub); }
  std::unique_ptr<ImageStore> store_;
};

std::string slurp(const std::string& path) {
  auto r = readFile(path);
  return r ? *r : "<missing>";
}

TEST_F(RegistryTest, PullsByTagAndByDigest) {
  auto m = pushBusybox("team/busy", "v1");
  auto first = pull("team/busy:v1");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->fetched);
  EXPECT_EQ(first->record.manifestDigest, m.digest);
  EXPECT_EQ(first->record.config.cmd.back(), "echo hello from the image");
  EXPECT_TRUE(::access(first->erofsPath.c_str(), R_OK) == 0);
  EXPECT_GT(first->bytesDownloaded, 500'000u);

  auto again = pull("team/busy:v1");
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->fetched);

  auto byDigest = pull("team/busy@" + m.digest);
  ASSERT_TRUE(byDigest) << byDigest.error().message;
  EXPECT_EQ(byDigest->record.manifestDigest, m.digest);
  EXPECT_FALSE(byDigest->fetched);  // the store has that digest: no registry round trip
  auto byDigestAlways = pull("team/busy@" + m.digest, PullPolicy::Always);
  ASSERT_TRUE(byDigestAlways) << byDigestAlways.error().message;
  EXPECT_EQ(byDigestAlways->bytesDownloaded, 0u);  // blobs and image are shared

  auto listed = store_->list();
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 2u);
  std::string x = extract(*first);
  EXPECT_EQ(slurp(x + "/etc/passwd").substr(0, 4), "root");

  auto missing = pull("team/nothing:v1", PullPolicy::Never);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, exit_code::kImage);
  auto notThere = pull("team/nothing:v1");
  ASSERT_FALSE(notThere);
  EXPECT_NE(notThere.error().message.find("not found"), std::string::npos) << notThere.error().message;
}

TEST_F(RegistryTest, MultiArchIndexPicksTheRequestedPlatform) {
  auto base = layout_->addBlob(busyboxLayer(), kGzipLayer);
  auto amd = layout_->addImage({base, layout_->addBlob(makeTar({{"arch", 'f', "amd64"}}, "gzip"), kGzipLayer)}, "amd64");
  auto arm = layout_->addImage({base, layout_->addBlob(makeTar({{"arch", 'f', "arm64"}}, "gzip"), kGzipLayer)}, "arm64");
  auto index = layout_->addIndex({{arm, "arm64"}, {amd, "amd64"}});
  layout_->tag(index, "multi");
  layout_->push(*registry_, "team/multi", "multi", true);

  auto img = pull("team/multi:multi");
  ASSERT_TRUE(img) << img.error().message;
  EXPECT_EQ(img->record.manifestDigest, amd.digest);
  EXPECT_EQ(slurp(extract(*img) + "/arch"), "amd64");
  auto pinned = pull("team/multi@" + index.digest);
  ASSERT_TRUE(pinned) << pinned.error().message;
  EXPECT_EQ(pinned->record.manifestDigest, amd.digest);
  Platform arm64{"linux", "arm64", ""};
  auto other = pull("team/multi:multi", PullPolicy::Always, arm64);
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_EQ(other->record.manifestDigest, arm.digest);
  auto none = pull("team/multi:multi", PullPolicy::Always, Platform{"linux", "s390x", ""});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("linux/arm64"), std::string::npos) << none.error().message;
}

TEST_F(RegistryTest, GzipZstdAndPlainLayersWithWhiteoutsAcrossLayers) {
  auto l1 = layout_->addBlob(busyboxLayer(), kGzipLayer);
  auto l2 = layout_->addBlob(makeTar({{"data/", 'd'}, {"data/keep", 'f', "keep"}, {"data/gone", 'f', "gone"},
                                      {"cache/", 'd'}, {"cache/old", 'f', "old"}},
                                     "zstd"),
                             kZstdLayer);
  auto l3 = layout_->addBlob(makeTar({{"data/.wh.gone", 'f'}, {"cache/.wh..wh..opq", 'f'}, {"cache/new", 'f', "new"}}),
                             kTarLayer);
  auto m = layout_->addImage({l1, l2, l3});
  layout_->tag(m, "layers");
  layout_->push(*registry_, "team/layers", "layers");
  auto img = pull("team/layers:layers");
  ASSERT_TRUE(img) << img.error().message;
  std::string x = extract(*img);
  EXPECT_EQ(slurp(x + "/data/keep"), "keep");
  EXPECT_NE(::access((x + "/data/gone").c_str(), F_OK), 0) << "deleted in layer 3 but present";
  EXPECT_NE(::access((x + "/cache/old").c_str(), F_OK), 0) << "opaque dir kept a lower entry";
  EXPECT_EQ(slurp(x + "/cache/new"), "new");
  EXPECT_NE(::access((x + "/data/.wh.gone").c_str(), F_OK), 0);
}

TEST_F(RegistryTest, CorruptedBlobIsRefusedAndNotCached) {
  auto layer = layout_->addBlob(busyboxLayer(), kGzipLayer);
  auto m = layout_->addImage({layer});
  layout_->tag(m, "v1");
  layout_->push(*registry_, "team/corrupt", "v1");
  {
    std::fstream f(registry_->blobFile(layer.digest), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f);
    f.seekp(static_cast<std::streamoff>(layer.size / 2));
    f.write("CORRUPT", 7);
  }
  auto img = pull("team/corrupt:v1");
  ASSERT_FALSE(img);
  EXPECT_EQ(img.error().code, exit_code::kImage);
  EXPECT_NE(img.error().message.find("failed verification"), std::string::npos) << img.error().message;
  EXPECT_NE(img.error().message.find(layer.digest), std::string::npos);
  for (const auto& name : storeFiles("blobs/sha256")) EXPECT_EQ(name.find(layer.digest.substr(7)), std::string::npos) << name;
  EXPECT_TRUE(storeFiles("images").empty());
  EXPECT_FALSE(store_->findRef(ref("team/corrupt:v1")));
}

// A layer whose uncompressed stream is not what the config's rootfs.diff_ids
// says (the manifest and the config disagree) refuses the image, naming the
// layer, and leaves nothing in the store; a config listing fewer diff_ids
// than layers is refused too.
TEST_F(RegistryTest, LayerNotMatchingItsDiffIdIsRefusedAndNotCached) {
  auto base = layout_->addBlob(busyboxLayer(), kGzipLayer);
  auto extra = layout_->addBlob(makeTar({{"etc/motd", 'f', "hello"}}, "zstd"), kZstdLayer);
  const std::string wrong = "sha256:" + std::string(64, 'a');
  auto m = layout_->addImage({base, extra}, "amd64", {"/bin/sh"}, {test::uncompressedDigest(busyboxLayer()), wrong});
  layout_->tag(m, "v1");
  auto short_ = layout_->addImage({base, extra}, "amd64", {"/bin/sh"}, {});
  layout_->tag(short_, "ok");
  layout_->push(*registry_, "team/diffid", "v1");
  auto img = pull("team/diffid:v1");
  ASSERT_FALSE(img);
  EXPECT_EQ(img.error().code, exit_code::kImage);
  EXPECT_NE(img.error().message.find("layer 2 of 2 (" + extra.digest + ")"), std::string::npos) << img.error().message;
  EXPECT_NE(img.error().message.find(wrong), std::string::npos) << img.error().message;
  EXPECT_NE(img.error().message.find("diff_ids"), std::string::npos) << img.error().message;
  EXPECT_TRUE(storeFiles("images").empty());
  EXPECT_TRUE(storeFiles("blobs/sha256").empty()) << storeFiles("blobs/sha256").front();
  EXPECT_FALSE(store_->findRef(ref("team/diffid:v1")));
  // The same layers with the right diff_ids pull and boot-check fine.
  layout_->push(*registry_, "team/diffid", "ok");
  auto good = pull("team/diffid:ok");
  ASSERT_TRUE(good) << good.error().message;
}

TEST_F(RegistryTest, InterruptedDownloadResumesWithRange) {
  std::string noise(4 << 20, '\0');
  std::mt19937_64 rng(42);
  for (auto& c : noise) c = static_cast<char>(rng());
  auto big = layout_->addBlob(makeTar({{"noise", 'f', noise}}), kTarLayer);
  auto m = layout_->addImage({layout_->addBlob(busyboxLayer(), kGzipLayer), big});
  layout_->tag(m, "big");
  layout_->push(*registry_, "team/big", "big");
  // What an interrupted pull leaves: the first 3 MiB of the layer.
  ASSERT_TRUE(store_->ensureLayout());
  auto whole = readFile(registry_->blobFile(big.digest), 64 << 20);
  ASSERT_TRUE(whole);
  ASSERT_TRUE(writeFileAtomic(store_->blobPath(big.digest) + ".partial", whole->substr(0, 3 << 20)));
  auto img = pull("team/big:big");
  ASSERT_TRUE(img) << img.error().message;
  EXPECT_LT(img->bytesDownloaded, big.size - (3 << 20) + 2'000'000) << "the partial download was not resumed";
  EXPECT_EQ(slurp(extract(*img) + "/noise").size(), noise.size());
  EXPECT_FALSE(pathExists(store_->blobPath(big.digest) + ".partial"));
}

TEST_F(RegistryTest, StalePartialDownloadIsReplaced) {
  auto m = pushBusybox("team/stale", "v1");
  auto manifest = readFile(registry_->blobFile(m.digest));
  ASSERT_TRUE(manifest);
  auto doc = parseManifest(*manifest, "");
  ASSERT_TRUE(doc);
  const Descriptor& layer = doc->layers.at(0);
  ASSERT_TRUE(store_->ensureLayout());
  ASSERT_TRUE(writeFileAtomic(store_->blobPath(layer.digest) + ".partial", std::string(1000, 'x')));
  auto img = pull("team/stale:v1");
  ASSERT_TRUE(img) << img.error().message;
  EXPECT_TRUE(pathExists(store_->blobPath(layer.digest)));
}

TEST_F(RegistryTest, ConcurrentPullsOfTheSameImage) {
  auto m = pushBusybox("team/conc", "v1");
  constexpr int kPulls = 4;
  std::vector<Result<PulledImage>> results(kPulls, std::unexpected(Error{"not run"}));
  std::vector<std::thread> threads;
  for (int i = 0; i < kPulls; ++i) threads.emplace_back([&, i] { results[i] = pull("team/conc:v1", PullPolicy::Always); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->record.manifestDigest, m.digest);
  }
  EXPECT_EQ(storeFiles("images"), std::vector<std::string>{m.digest.substr(7)});
  for (const auto& name : storeFiles("blobs/sha256")) EXPECT_EQ(name.find(".partial"), std::string::npos) << name;
}

TEST_F(RegistryTest, MaliciousLayersAreRefusedWithTheHostUntouched) {
  const std::string victim = tmp_->path() + "/victim";
  ASSERT_EQ(::mkdir(victim.c_str(), 0755), 0);
  auto base = layout_->addBlob(busyboxLayer(), kGzipLayer);
  auto dotdot = layout_->addImage({base, layout_->addBlob(makeTar({{"../../etc/x", 'f', "pwned"}}, "gzip"), kGzipLayer)});
  auto through = layout_->addImage(
      {base, layout_->addBlob(makeTar({{"evil", 'l', "", victim}, {"evil/planted", 'f', "pwned"}}, "gzip"), kGzipLayer)});
  layout_->tag(dotdot, "dotdot");
  layout_->tag(through, "symlink");
  layout_->push(*registry_, "team/evil", "dotdot");
  layout_->push(*registry_, "team/evil", "symlink");

  auto a = pull("team/evil:dotdot");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, exit_code::kImage);
  EXPECT_NE(a.error().message.find("layer 2 of 2"), std::string::npos) << a.error().message;
  EXPECT_NE(a.error().message.find("../../etc/x"), std::string::npos) << a.error().message;
  auto b = pull("team/evil:symlink");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("evil/planted"), std::string::npos) << b.error().message;
  EXPECT_NE(::access((victim + "/planted").c_str(), F_OK), 0);
  EXPECT_NE(::access((store_->root() + "/etc/x").c_str(), F_OK), 0);
  EXPECT_NE(::access((store_->imagesDir() + "/etc/x").c_str(), F_OK), 0);
  EXPECT_TRUE(storeFiles("images").empty()) << "a refused image or its staging dir was left";
}

TEST_F(RegistryTest, RemoveAndPrune) {
  pushBusybox("team/rm", "v1");
  ASSERT_TRUE(pull("team/rm:v1"));
  auto removed = store_->remove(ref("team/rm:v1"));
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(removed->images.size(), 1u);
  EXPECT_TRUE(storeFiles("images").empty());
  EXPECT_TRUE(storeFiles("blobs/sha256").empty());
  EXPECT_FALSE(store_->remove(ref("team/rm:v1")));
  auto again = pull("team/rm:v1");
  ASSERT_TRUE(again);
  auto kept = store_->prune(std::nullopt);
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->images.empty());
  ASSERT_TRUE(store_->writeRef({again->ref.name, again->ref.manifestDigest, 1000}));  // pulled long ago, never booted
  auto old = store_->prune(30u);
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->refs.size(), 1u);
  EXPECT_TRUE(storeFiles("images").empty());
}

}  // namespace
}  // namespace airlock::image::oci

namespace airlock::image::oci {
namespace {

// Boots a pulled image in a real microVM (TCG where KVM is unusable) through
// the CLI: default cmd, then a command line with the image's env.
TEST_F(RegistryTest, RunImageBootsThePulledImage) {
  if (findProgram("qemu-system-x86_64").empty()) GTEST_SKIP() << "qemu-system-x86_64 is not installed";
  pushBusybox("team/boot", "v1");
  const std::string image = registry_->host() + "/team/boot:v1";
  // The default cache (boot assets are there); the image is removed at the end.
  auto def = runCommand({AIRLOCK_BINARY, "run-image", "-q", "--tty", "never", image});
  ASSERT_TRUE(def);
  EXPECT_EQ(def->exitCode, 0) << def->stderrText;
  EXPECT_EQ(def->stdoutText, "hello from the image\n") << def->stderrText;
  auto cmd = runCommand({AIRLOCK_BINARY, "run-image", "-q", "--tty", "never", "--pull=never", image, "--", "sh", "-c",
                         "echo $GREETING; pwd; exit 7"});
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->exitCode, 7) << cmd->stderrText;
  EXPECT_EQ(cmd->stdoutText, "hi\n/\n");
  auto ls = runCommand({AIRLOCK_BINARY, "image", "ls", "--json"});
  ASSERT_TRUE(ls);
  EXPECT_NE(ls->stdoutText.find("team/boot:v1"), std::string::npos);
  auto rm = runCommand({AIRLOCK_BINARY, "image", "rm", image});
  ASSERT_TRUE(rm);
  EXPECT_EQ(rm->exitCode, 0) << rm->stderrText;
}

TEST_F(RegistryTest, CustomAgentWithARegistryImageRunsThroughTheReviewGate) {
  if (findProgram("qemu-system-x86_64").empty()) GTEST_SKIP() << "qemu-system-x86_64 is not installed";
  pushBusybox("team/agent", "v1");
  const std::string image = registry_->host() + "/team/agent:v1";
  const std::string config = tmp_->path() + "/config", ws = tmp_->path() + "/ws";
  ASSERT_TRUE(makeDirs(config + "/airlock"));
  ASSERT_TRUE(makeDirs(ws));
  ASSERT_TRUE(writeFileAtomic(ws + "/README", "before\n"));
  ASSERT_TRUE(writeFileAtomic(config + "/airlock/config.yaml", R"(agents:
  team-agent:
    description: Our agent, from our registry
    image: )" + image + R"(
    command: [sh, -c, "echo edited > /workspace/README; echo new > /workspace/NEW"]
    egress: {model_hosts: [api.example.com]}
)"));
  // The default cache (boot assets are there); the image is removed at the end.
  auto run = runCommand({"env", "XDG_CONFIG_HOME=" + config, "XDG_STATE_HOME=" + tmp_->path() + "/state",
                         AIRLOCK_BINARY, "run", "team-agent", "-q", "-w", ws, "--review=auto", "--tty", "never",
                         "--egress-profile", "locked"});
  ASSERT_TRUE(run);
  EXPECT_EQ(run->exitCode, 0) << run->stderrText;
  auto readme = readFile(ws + "/README");
  EXPECT_EQ(readme ? *readme : "", "edited\n") << run->stderrText;
  auto added = readFile(ws + "/NEW");
  EXPECT_EQ(added ? *added : "", "new\n");
  auto rm = runCommand({AIRLOCK_BINARY, "image", "rm", image});
  ASSERT_TRUE(rm);
  EXPECT_EQ(rm->exitCode, 0) << rm->stderrText;
}

}  // namespace
}  // namespace airlock::image::oci
