// The workspace snapshot's erofs image, read back with dump.erofs: what the
// guest's /workspace lower layer holds (owners, modes, times, no xattrs).
#include "vm/workspace_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "support/scratch.h"
#include "vm/guest_contract.h"

namespace airlock::vm {
namespace {

/// dump.erofs's description of `path` in `image` ("" when it fails).
std::string describe(const std::string& image, const std::string& path) {
  auto out = runCommand({"dump.erofs", "--path=" + path, image});
  return out && out->exitCode == 0 ? out->stdoutText : "";
}

TEST(WorkspaceImage, EveryEntryBelongsToTheAgentWithModesAndTimesKept) {
  auto dir = test::scratchDir();
  const std::string src = dir.path() + "/snapshot", image = dir.path() + "/workspace.erofs";
  ASSERT_TRUE(makeDirs(src + "/src"));
  ASSERT_TRUE(writeFileAtomic(src + "/src/main.c", "int main(void) { return 0; }\n", 0640));
  ASSERT_TRUE(writeFileAtomic(src + "/run.sh", "#!/bin/sh\n", 0755));
  ASSERT_EQ(symlink("src/main.c", (src + "/link").c_str()), 0);
  ASSERT_EQ(chmod((src + "/src").c_str(), 0751), 0);
  // A time the build tools in the guest compare: kept to the nanosecond.
  timespec times[2] = {{981173106, 123456789}, {981173106, 123456789}};
  ASSERT_EQ(utimensat(AT_FDCWD, (src + "/src/main.c").c_str(), times, 0), 0);
  // A host label or capability must not follow the file into the guest.
  bool labelled = setxattr((src + "/run.sh").c_str(), "user.origin", "host", 4, 0) == 0;

  ASSERT_TRUE(buildWorkspaceImage(src, image));

  const std::string agent = std::to_string(guest::kAgentUid);
  for (const char* path : {"/", "/src", "/src/main.c", "/run.sh", "/link"}) {
    std::string info = describe(image, path);
    ASSERT_NE(info, "") << path;
    EXPECT_NE(info.find("Uid: " + agent + "   Gid: " + agent), std::string::npos) << path << "\n" << info;
    EXPECT_NE(info.find("Xattr size: 0"), std::string::npos) << path << "\n" << info;
  }
  EXPECT_NE(describe(image, "/src/main.c").find("Access: 0640"), std::string::npos);
  EXPECT_NE(describe(image, "/run.sh").find("Access: 0755"), std::string::npos);
  EXPECT_NE(describe(image, "/src").find("Access: 0751"), std::string::npos);
  EXPECT_NE(describe(image, "/link").find("symlink"), std::string::npos);
  EXPECT_NE(describe(image, "/src/main.c").find("Timestamp: 2001-02-03 04:05:06.123456789"), std::string::npos)
      << describe(image, "/src/main.c");
  if (!labelled) GTEST_LOG_(INFO) << "this filesystem refuses user xattrs: the xattr case was not exercised";
}

// A sparse file (a VM disk, a database) must not become gigabytes of zeros
// in the state directory (found by a breaker: a 5 GiB sparse file filled the disk).
TEST(WorkspaceImage, ASparseFileStaysSparse) {
  auto dir = test::scratchDir();
  const std::string src = dir.path() + "/snapshot", image = dir.path() + "/workspace.erofs";
  ASSERT_TRUE(makeDirs(src));
  Fd f(::open((src + "/disk.img").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_TRUE(f);
  ASSERT_EQ(::ftruncate(f.get(), off_t{256} << 20), 0);
  ASSERT_EQ(::pwrite(f.get(), "end", 3, (off_t{256} << 20) - 3), 3);
  f.reset();
  ASSERT_TRUE(buildWorkspaceImage(src, image));
  struct stat st {};
  ASSERT_EQ(::stat(image.c_str(), &st), 0);
  EXPECT_LT(st.st_blocks * 512, off_t{8} << 20) << "a 256 MiB sparse file took " << st.st_blocks * 512 << " bytes";
  EXPECT_NE(describe(image, "/disk.img").find("Size: 268435456"), std::string::npos) << describe(image, "/disk.img");
}

TEST(WorkspaceImage, AFailureNamesTheImage) {
  auto dir = test::scratchDir();
  auto built = buildWorkspaceImage(dir.path() + "/missing", dir.path() + "/no/such/dir/workspace.erofs");
  ASSERT_FALSE(built);
  EXPECT_NE(built.error().message.find("workspace image"), std::string::npos) << built.error().message;
}

}  // namespace
}  // namespace airlock::vm
