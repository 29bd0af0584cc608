#include "vm/guest_kernel.h"

#include <gtest/gtest.h>

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
  const std::regex option(R"(CONFIG_[A-Z0-9_]+=(y|[0-9]+|"[^"]*"))");
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
