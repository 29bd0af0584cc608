#include "vm/guest_kernel.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "vm/boot_assets.h"

namespace airlock::vm {
namespace {

TEST(GuestKernelConfig, EveryOptionIsBuiltInOrAValueAndNoneIsAModule) {
  std::istringstream lines{std::string(guestKernelConfig())};
  const std::regex option(R"(CONFIG_[A-Z0-9_]+=(y|m|[0-9]+|"[^"]*"))");
  size_t options = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("#")) continue;
    EXPECT_TRUE(std::regex_match(line, option)) << "not an option line: " << line;
    EXPECT_FALSE(line.ends_with("=m")) << "modules are never loaded: " << line;
    ++options;
  }
  // The drivers and filesystems airlock's VMs need, built in.
  for (const char* needed : {"CONFIG_PVH=y", "CONFIG_VIRTIO_MMIO=y", "CONFIG_VIRTIO_BLK=y", "CONFIG_VIRTIO_NET=y",
                             "CONFIG_VIRTIO_CONSOLE=y", "CONFIG_VIRTIO_FS=y", "CONFIG_VIRTIO_BALLOON=y",
                             "CONFIG_EROFS_FS=y", "CONFIG_EXT4_FS=y", "CONFIG_OVERLAY_FS=y", "CONFIG_MULTIUSER=y"}) {
    EXPECT_NE(guestKernelConfig().find(std::string(needed) + "\n"), std::string_view::npos) << needed;
  }
  EXPECT_GT(options, 50u);
}

// allnoconfig leaves out what Debian's kernel has on by default; the agent is
// an unprivileged user in the guest, so these must stay.
TEST(GuestKernelConfig, KeepsDebiansMitigationsAndHardening) {
  for (const char* option :
       {"CONFIG_PAGE_TABLE_ISOLATION=y", "CONFIG_RETPOLINE=y", "CONFIG_RETHUNK=y", "CONFIG_CPU_SRSO=y",
        "CONFIG_MITIGATION_SPECTRE_BHI=y", "CONFIG_STACKPROTECTOR_STRONG=y", "CONFIG_VMAP_STACK=y",
        "CONFIG_HARDENED_USERCOPY=y", "CONFIG_SLAB_FREELIST_HARDENED=y", "CONFIG_BPF_UNPRIV_DEFAULT_OFF=y",
        "CONFIG_SECCOMP_FILTER=y", "CONFIG_SECURITY_LANDLOCK=y", "CONFIG_RANDOM_TRUST_CPU=y"}) {
    EXPECT_NE(guestKernelConfig().find(std::string(option) + "\n"), std::string_view::npos) << option;
  }
}

TEST(GuestKernelConfig, NamesWhatKconfigDroppedOrChanged) {
  const std::string fragment =
      "# a comment\n"
      "CONFIG_A=y\n"
      "\n"
      "CONFIG_B=y\n"
      "CONFIG_NR_CPUS=64\n"
      "CONFIG_LSM=\"landlock\"\n"
      "# CONFIG_C is not set\n";
  const std::string dotConfig =
      "CONFIG_A=y\n"
      "# CONFIG_B is not set\n"
      "CONFIG_NR_CPUS=8\n"
      "CONFIG_LSM=\"landlock\"\n";
  EXPECT_EQ(droppedOptions(fragment, dotConfig), (std::vector<std::string>{"CONFIG_B=y", "CONFIG_NR_CPUS=64"}));
  EXPECT_TRUE(droppedOptions(fragment, dotConfig + "CONFIG_B=y\nCONFIG_NR_CPUS=64\n").empty());
}

TEST(GuestKernelConfig, TheCacheKeyFollowsTheFragment) {
  std::string name = guestKernelDirName("CONFIG_A=y\n");
  EXPECT_TRUE(std::regex_match(name, std::regex("guest-kernel-[0-9a-f]{16}"))) << name;
  EXPECT_EQ(name, guestKernelDirName("CONFIG_A=y\n"));
  EXPECT_NE(name, guestKernelDirName("CONFIG_A=y\nCONFIG_B=y\n"));
}

TEST(GuestKernelBuild, WithoutTheSourceItNamesThePackage) {
  auto cache = TempDir::create(::testing::TempDir(), "guest-kernel-test-");
  ASSERT_TRUE(cache.has_value());
  auto built = buildGuestKernel(cache->path(), {.sourceTarball = cache->path() + "/no-such.tar.xz"}, {});
  ASSERT_FALSE(built.has_value());
  EXPECT_EQ(built.error().code, exit_code::kHostNotReady);
  EXPECT_NE(built.error().message.find("apt-get install linux-source-6.1"), std::string::npos) << built.error().message;
  EXPECT_FALSE(builtGuestKernel(cache->path()).has_value());
}

/// A cache holding a built kernel (fake files) for the built-in fragment.
std::string fakeBuiltKernel(const std::string& cache) {
  const std::string dir = bootAssetsDir(cache) + "/" + guestKernelDirName(guestKernelConfig());
  EXPECT_TRUE(makeDirs(dir + "/modules").has_value());
  EXPECT_TRUE(writeFileAtomic(dir + "/vmlinux", "elf").has_value());
  EXPECT_TRUE(writeFileAtomic(dir + "/release", "6.1.0-airlock\n").has_value());
  EXPECT_TRUE(writeFileAtomic(dir + "/modules/load-order", "").has_value());
  return dir;
}

// scripts/build runs `airlock system kernel build` every time: with the kernel
// cached it answers at once, even where the source and the tools are gone.
TEST(GuestKernelBuild, ACachedKernelNeedsNoSourceOrTools) {
  auto cache = TempDir::create(::testing::TempDir(), "guest-kernel-test-");
  ASSERT_TRUE(cache.has_value());
  const std::string dir = fakeBuiltKernel(cache->path());
  auto built = buildGuestKernel(cache->path(), {.sourceTarball = cache->path() + "/gone.tar.xz"}, {});
  ASSERT_TRUE(built.has_value()) << built.error().message;
  EXPECT_EQ(*built, dir);
}

// A new linux-source-6.1 from apt (another size or mtime) is noticed, and the
// next build rebuilds; the cached kernel stays usable meanwhile.
TEST(GuestKernelBuild, ANewSourceIsRebuiltFromAndTheCachedKernelStays) {
  auto cache = TempDir::create(::testing::TempDir(), "guest-kernel-test-");
  ASSERT_TRUE(cache.has_value());
  const std::string dir = fakeBuiltKernel(cache->path());
  const std::string tarball = cache->path() + "/linux-source.tar.xz";
  ASSERT_TRUE(writeFileAtomic(tarball, "not a tarball").has_value());
  EXPECT_FALSE(guestKernelSourceChanged(dir, tarball));  // no record to compare against
  struct stat st {};
  ASSERT_EQ(::stat(tarball.c_str(), &st), 0);
  ASSERT_TRUE(
      writeFileAtomic(dir + "/source", fmt::format("{} {} {}\n", tarball, st.st_size, st.st_mtim.tv_sec)).has_value());
  EXPECT_FALSE(guestKernelSourceChanged(dir, tarball));
  EXPECT_FALSE(guestKernelSourceChanged(dir, cache->path() + "/gone.tar.xz"));
  ASSERT_TRUE(writeFileAtomic(tarball, "a newer source, not a tarball either").has_value());
  EXPECT_TRUE(guestKernelSourceChanged(dir, tarball));

  std::vector<std::string> progress;
  auto built =
      buildGuestKernel(cache->path(), {.sourceTarball = tarball}, [&](const std::string& l) { progress.push_back(l); });
  ASSERT_FALSE(built.has_value());  // the "source" does not unpack
  EXPECT_TRUE(std::any_of(progress.begin(), progress.end(),
                          [](const std::string& l) { return l.find("changed since") != std::string::npos; }));
  EXPECT_EQ(builtGuestKernel(cache->path()), dir);
  EXPECT_EQ(readFile(dir + "/vmlinux").value_or(""), "elf");
}

TEST(GuestKernelBuild, OnlyACompleteDirectoryCounts) {
  auto cache = TempDir::create(::testing::TempDir(), "guest-kernel-test-");
  ASSERT_TRUE(cache.has_value());
  const std::string dir = bootAssetsDir(cache->path()) + "/" + guestKernelDirName(guestKernelConfig());
  ASSERT_TRUE(makeDirs(dir + "/modules").has_value());
  ASSERT_TRUE(writeFileAtomic(dir + "/vmlinux", "elf").has_value());
  ASSERT_TRUE(writeFileAtomic(dir + "/release", "6.1.0-airlock\n").has_value());
  EXPECT_FALSE(builtGuestKernel(cache->path()).has_value());  // no load-order
  ASSERT_TRUE(writeFileAtomic(dir + "/modules/load-order", "").has_value());
  EXPECT_EQ(builtGuestKernel(cache->path()), dir);
}

}  // namespace
}  // namespace airlock::vm
