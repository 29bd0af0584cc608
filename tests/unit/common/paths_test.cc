// Filesystem helpers: listDir, removeTree, TempDir, writeFileAtomic.

#include "common/paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.h"
#include "support/scratch.h"

namespace airlock {
namespace {

class PathsTest : public testing::Test {
 protected:
  void SetUp() override { dir_.emplace(airlock::test::scratchDir("airlock-paths-")); }
  std::string path(const std::string& name) const { return dir_->path() + "/" + name; }
  std::optional<TempDir> dir_;
};

TEST_F(PathsTest, ListDirIsSortedWithoutDotEntries) {
  for (const char* name : {"b", "a", ".hidden", "c"}) ASSERT_TRUE(writeFileAtomic(path(name), "x"));
  ASSERT_TRUE(makeDirs(path("d/e")));
  auto names = listDir(dir_->path());
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{".hidden", "a", "b", "c", "d"}));
}

TEST_F(PathsTest, ListDirOfAMissingDirectoryNamesIt) {
  auto names = listDir(path("missing"));
  ASSERT_FALSE(names);
  EXPECT_NE(names.error().message.find(path("missing")), std::string::npos);
  EXPECT_NE(names.error().message.find("No such file"), std::string::npos);
}

TEST_F(PathsTest, RemoveTreeNeverFollowsSymlinks) {
  ASSERT_TRUE(makeDirs(path("outside")));
  ASSERT_TRUE(writeFileAtomic(path("outside/keep"), "kept"));
  ASSERT_TRUE(makeDirs(path("tree/sub")));
  ASSERT_EQ(::symlink(path("outside").c_str(), path("tree/sub/link").c_str()), 0);
  ASSERT_TRUE(removeTree(path("tree")));
  EXPECT_NE(::access(path("tree").c_str(), F_OK), 0);
  EXPECT_EQ(readFile(path("outside/keep")).value_or(""), "kept");
  EXPECT_TRUE(removeTree(path("tree")));  // missing is not an error
}

// A tarball from npm or GitHub can leave a directory of mode 0000: as its
// owner (not root, who is never refused) removeTree opens it up and removes
// it, so no stale build directory blocks the next build. Run in a child as
// nobody when the test runs as root.
TEST_F(PathsTest, RemoveTreeRemovesDirectoriesOfModeZero) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(2);
    char tmpl[] = "/tmp/airlock-mode0-XXXXXX";
    if (!::mkdtemp(tmpl)) ::_exit(3);
    const std::string top = tmpl;
    if (!makeDirs(top + "/a/b") || !writeFileAtomic(top + "/a/b/f", "x")) ::_exit(4);
    if (::chmod((top + "/a/b").c_str(), 0) != 0 || ::chmod((top + "/a").c_str(), 0) != 0) ::_exit(5);
    auto removed = removeTree(top);
    ::_exit(removed && ::access(top.c_str(), F_OK) != 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(PathsTest, TempDirIsRemovedWithItsContents) {
  std::string made;
  {
    auto t = TempDir::create(dir_->path(), "scratch-");
    ASSERT_TRUE(t);
    made = t->path();
    ASSERT_TRUE(makeDirs(made + "/a/b"));
    ASSERT_TRUE(writeFileAtomic(made + "/a/b/f", "x"));
  }
  EXPECT_NE(::access(made.c_str(), F_OK), 0);
}

TEST_F(PathsTest, WriteFileAtomicReplacesAndLeavesNoTemporaryFile) {
  ASSERT_TRUE(writeFileAtomic(path("f"), "old", 0600));
  ASSERT_TRUE(writeFileAtomic(path("f"), "new", 0600));
  EXPECT_EQ(readFile(path("f")).value_or(""), "new");
  struct stat st {};
  ASSERT_EQ(::stat(path("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(listDir(dir_->path()).value_or(std::vector<std::string>{}), std::vector<std::string>{"f"});
}

TEST_F(PathsTest, WriteFileAtomicHonoursTheUmask) {
  mode_t old = ::umask(027);
  auto written = writeFileAtomic(path("f"), "x", 0666);
  ::umask(old);
  ASSERT_TRUE(written);
  struct stat st {};
  ASSERT_EQ(::stat(path("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// Writers in one process used to share the temp name "<path>.tmp.<pid>": one
// could rename the other's half-written file into place.
TEST_F(PathsTest, ConcurrentWritersEachLandWholeContent) {
  std::vector<std::string> contents;
  for (char c = 'a'; c < 'a' + 8; ++c) contents.emplace_back(64 * 1024, c);
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (const auto& content : contents)
    writers.emplace_back([&, content] {
      for (int i = 0; i < 20; ++i)
        if (!writeFileAtomic(path("f"), content)) ++failures;
    });
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0);
  std::string final = readFile(path("f")).value_or("");
  EXPECT_NE(std::find(contents.begin(), contents.end(), final), contents.end()) << "a torn or mixed file landed";
  EXPECT_EQ(listDir(dir_->path()).value_or(std::vector<std::string>{}), std::vector<std::string>{"f"});
}

TEST_F(PathsTest, WriteFileAtomicIntoAMissingDirectoryFailsWithThePath) {
  auto written = writeFileAtomic(path("missing/f"), "x");
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find(path("missing/f")), std::string::npos);
}

}  // namespace
}  // namespace airlock
