#include "image/rootfs_image.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"

namespace airlock::image {
namespace {

class RootfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create(::testing::TempDir(), "rootfs-test-");
    ASSERT_TRUE(dir.has_value());
    temp_.emplace(std::move(*dir));
    root_ = temp_->path() + "/root";
    for (const char* d : {"", "/bin", "/etc", "/usr", "/usr/lib"}) ASSERT_TRUE(makeDirs(root_ + d).has_value());
    write("bin/busybox", "#!fake busybox\n", 0755);
    ASSERT_EQ(::symlink("/bin/busybox", (root_ + "/bin/sh").c_str()), 0);
    write("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0644);
    write("usr/lib/data", "some data", 0644);
  }

  void write(const std::string& rel, std::string_view data, unsigned mode) {
    std::string path = root_ + "/" + rel;
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    ASSERT_TRUE(fd && writeAll(fd.get(), data)) << path;
    ASSERT_EQ(::fchmod(fd.get(), mode), 0);
  }

  /// Sets the mtime of `rel` to a fixed instant (not following symlinks).
  void setMtime(const std::string& rel, long nsec) {
    timespec times[2] = {{1700000000, 0}, {1700000000, nsec}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (root_ + "/" + rel).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }

  std::string digest() {
    auto d = rootfsDigest(root_);
    EXPECT_TRUE(d.has_value()) << (d ? "" : d.error().message);
    return d.value_or("");
  }

  std::optional<TempDir> temp_;
  std::string root_;
};

TEST_F(RootfsTest, DigestIsStableForAnUnchangedTree) {
  std::string first = digest();
  EXPECT_EQ(first.size(), 64u);
  EXPECT_EQ(digest(), first);
}

TEST_F(RootfsTest, DigestChangesWhenContentChangesEvenWithSameSizeAndMtime) {
  setMtime("usr/lib/data", 0);
  std::string before = digest();
  write("usr/lib/data", "SOME DATA", 0644);
  setMtime("usr/lib/data", 0);
  EXPECT_NE(digest(), before);
}

TEST_F(RootfsTest, DigestChangesWithModeMtimeSymlinkTargetAndNewEntries) {
  std::string base = digest();
  ASSERT_EQ(::chmod((root_ + "/etc/passwd").c_str(), 0600), 0);
  std::string afterMode = digest();
  EXPECT_NE(afterMode, base);

  setMtime("etc/passwd", 1);
  std::string afterMtime = digest();
  EXPECT_NE(afterMtime, afterMode);

  ASSERT_EQ(::unlink((root_ + "/bin/sh").c_str()), 0);
  ASSERT_EQ(::symlink("busybox", (root_ + "/bin/sh").c_str()), 0);
  setMtime("bin", 5);
  std::string afterLink = digest();
  EXPECT_NE(afterLink, afterMtime);

  ASSERT_EQ(::mkfifo((root_ + "/usr/fifo").c_str(), 0600), 0);
  setMtime("usr", 5);
  EXPECT_NE(digest(), afterLink);
}

TEST_F(RootfsTest, DigestDoesNotFollowSymlinks) {
  std::string outside = temp_->path() + "/outside";
  ASSERT_TRUE(makeDirs(outside).has_value());
  ASSERT_TRUE(writeFileAtomic(outside + "/file", "one").has_value());
  ASSERT_EQ(::symlink(outside.c_str(), (root_ + "/usr/escape").c_str()), 0);
  ASSERT_EQ(::symlink((outside + "/file").c_str(), (root_ + "/usr/escape-file").c_str()), 0);
  std::string before = digest();
  ASSERT_TRUE(writeFileAtomic(outside + "/file", "two, longer").has_value());
  ASSERT_TRUE(writeFileAtomic(outside + "/new", "x").has_value());
  EXPECT_EQ(digest(), before);
}

TEST_F(RootfsTest, CheckAcceptsBinShResolvedInsideTheRoot) {
  EXPECT_TRUE(checkRootfsDir(root_).has_value());
  // Merged /usr: /bin -> usr/bin, /bin/sh -> dash, as in Debian images.
  std::string merged = temp_->path() + "/merged";
  ASSERT_TRUE(makeDirs(merged + "/usr/bin").has_value());
  ASSERT_EQ(::symlink("usr/bin", (merged + "/bin").c_str()), 0);
  ASSERT_TRUE(writeFileAtomic(merged + "/usr/bin/dash", "#!fake", 0755).has_value());
  ASSERT_EQ(::symlink("dash", (merged + "/usr/bin/sh").c_str()), 0);
  EXPECT_TRUE(checkRootfsDir(merged).has_value());
}

TEST_F(RootfsTest, CheckRejectsAMissingBinShEvenIfTheHostHasOne) {
  ASSERT_EQ(::unlink((root_ + "/bin/sh").c_str()), 0);
  auto r = checkRootfsDir(root_);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, root_ + " does not look like a root filesystem: no /bin/sh");

  // An absolute symlink to the host's /bin/sh must not count: it resolves inside the root.
  ASSERT_EQ(::symlink("/bin/dash", (root_ + "/bin/sh").c_str()), 0);
  ASSERT_EQ(::access("/bin/dash", X_OK), 0);
  r = checkRootfsDir(root_);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, root_ + " does not look like a root filesystem: no /bin/sh");

  auto image = ensureRootfsImage(temp_->path() + "/cache", root_, {});
  ASSERT_FALSE(image.has_value());
  EXPECT_EQ(image.error().message, root_ + " does not look like a root filesystem: no /bin/sh");
}

TEST_F(RootfsTest, CheckRejectsAMissingDirectory) {
  auto r = checkRootfsDir(root_ + "/nope");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("rootfs directory " + root_ + "/nope does not exist"), std::string::npos)
      << r.error().message;
  r = checkRootfsDir(root_ + "/etc/passwd");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("is not a directory"), std::string::npos) << r.error().message;
}

/// The busybox test rootfs from tests/vm/make-test-rootfs.sh, turned into an
/// erofs image in a private cache by several threads at once.
TEST(RootfsImage, BuildsTheTestRootfsOnceAndReusesIt) {
  auto temp = TempDir::create(::testing::TempDir(), "rootfs-image-test-");
  ASSERT_TRUE(temp.has_value());
  const std::string cache = temp->path() + "/cache";
  std::string rootfs = temp->path() + "/rootfs";
  std::string script = std::string(AIRLOCK_SOURCE_DIR) + "/tests/vm/make-test-rootfs.sh";
  auto made = runChecked({script, rootfs});
  ASSERT_TRUE(made.has_value()) << made.error().message;
  std::string firstDigest = rootfsDigest(rootfs).value_or("");
  ASSERT_TRUE(runChecked({script, rootfs}).has_value());
  EXPECT_EQ(rootfsDigest(rootfs).value_or(""), firstDigest) << "make-test-rootfs.sh is not idempotent";

  auto start = std::chrono::steady_clock::now();
  std::vector<Result<std::string>> results(3, fail("not run"));
  std::vector<std::thread> threads;
  std::atomic<int> builds = 0;
  for (auto& result : results) {
    threads.emplace_back([&] {
      result = ensureRootfsImage(cache, rootfs, [&](const std::string& line) {
        if (line.starts_with("building")) ++builds;
      });
    });
  }
  for (auto& t : threads) t.join();
  std::printf("  erofs build of the test rootfs took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (const auto& r : results) {
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(*r, cache + "/rootfs/" + firstDigest + ".erofs");
  }
  EXPECT_EQ(builds.load(), 1);

  start = std::chrono::steady_clock::now();
  auto cached =
      ensureRootfsImage(cache, rootfs, [](const std::string& line) { ADD_FAILURE() << "rebuilt: " << line; });
  std::printf("  cached lookup (digest walk) took %.3f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(*cached, *results[0]);

  auto image = readFile(*cached, 64 << 20);
  ASSERT_TRUE(image.has_value());
  ASSERT_GT(image->size(), 1028u);
  EXPECT_EQ(image->substr(1024, 4), std::string("\xe2\xe1\xf5\xe0", 4));  // EROFS_SUPER_MAGIC_V1, little-endian
  auto check = runChecked({"fsck.erofs", *cached});
  EXPECT_TRUE(check.has_value()) << check.error().message;
  auto dir = runChecked({"ls", temp->path() + "/cache/rootfs"});
  ASSERT_TRUE(dir.has_value());
  EXPECT_EQ(*dir, firstDigest + ".erofs\n") << "no temporary files left behind";
}

}  // namespace
}  // namespace airlock::image
