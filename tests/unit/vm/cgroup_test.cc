#include "vm/cgroup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "common/paths.h"

namespace airlock::vm {
namespace {

TEST(CgroupLimits, AGuestGetsItsMemoryPlusRoomForQemu) {
  auto limits = limitsForGuest(1024);
  EXPECT_EQ(limits.memoryMaxBytes, 3072ull << 20);
  EXPECT_EQ(limits.pidsMax, 512u);
  // Writable disks on tmpfs are memory QEMU cannot give back.
  EXPECT_EQ(limitsForGuest(1024, 2048ull << 20).memoryMaxBytes, 5120ull << 20);
}

// A host that mounts cgroup v1 (this machine kind: a tmpfs of v1
// hierarchies at /sys/fs/cgroup): refused with the reason, nothing made.
TEST(VmCgroup, ACgroupV1HostIsRefusedWithTheReason) {
  auto dir = TempDir::create("/tmp", "airlock-cgroup-");
  ASSERT_TRUE(dir);
  auto cgroup = VmCgroup::create(dir->path(), "vm-1", limitsForGuest(512));
  ASSERT_FALSE(cgroup);
  EXPECT_NE(cgroup.error().message.find("is not a cgroup v2 hierarchy"), std::string::npos) << cgroup.error().message;
  auto entries = listDir(dir->path());
  ASSERT_TRUE(entries);
  EXPECT_TRUE(entries->empty());
}

// A real cgroup v2 hierarchy without the memory and pids controllers (on
// this machine kind cgroup v1 holds them): refused, and the airlock
// directory it made is gone again.
TEST(VmCgroup, AHierarchyWithoutTheControllersIsRefusedAndLeftAsItWas) {
  const std::string unified = "/sys/fs/cgroup/unified";
  struct statfs fs {};
  if (::statfs(unified.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC)
    GTEST_SKIP() << "needs a cgroup v2 hierarchy without memory and pids at " << unified;
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: creates cgroups";
  auto controllers = readFile(unified + "/cgroup.controllers");
  ASSERT_TRUE(controllers);
  if (controllers->find("memory") != std::string::npos && controllers->find("pids") != std::string::npos)
    GTEST_SKIP() << unified << " offers memory and pids: the refusal cannot be tried here";
  struct stat st {};
  const bool existed = ::stat((unified + "/airlock").c_str(), &st) == 0;
  auto cgroup = VmCgroup::create(unified, "vm-1", limitsForGuest(512));
  ASSERT_FALSE(cgroup);
  EXPECT_NE(cgroup.error().message.find("memory and pids controllers are not enabled"), std::string::npos)
      << cgroup.error().message;
  EXPECT_EQ(::stat((unified + "/airlock").c_str(), &st) == 0, existed);
}

}  // namespace
}  // namespace airlock::vm
