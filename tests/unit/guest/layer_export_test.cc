#include "guest/layer_export.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>

#include "common/paths.h"
#include "workspace/changeset.h"

namespace airlock::guest {
namespace {

using workspace::Change;

class LayerExport : public testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("/tmp", "airlock-export-");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    upper_ = dir_->path() + "/upper";
    ASSERT_EQ(mkdir(upper_.c_str(), 0755), 0);
  }
  void write(const std::string& rel, const std::string& content, mode_t mode = 0644) {
    std::ofstream(upper_ + "/" + rel, std::ios::binary) << content;
    chmod((upper_ + "/" + rel).c_str(), mode);
  }
  workspace::ChangeSet exportAndParse() {
    std::string tar, error, skipped;
    EXPECT_TRUE(exportUpperLayer(upper_, [&](std::string_view d) { tar.append(d); return true; }, error, skipped))
        << error;
    EXPECT_EQ(tar.size() % 512, 0u);
    auto cs = workspace::ChangeSet::fromTarBuffer(tar, dir_->path() + "/staged");
    EXPECT_TRUE(cs) << cs.error().message;
    return cs ? std::move(*cs) : workspace::ChangeSet{};
  }
  std::string staged(const workspace::ChangeSet& cs, const std::string& path) {
    std::ifstream in(cs.stagedPath(cs.changes().at(path)), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::optional<TempDir> dir_;
  std::string upper_;
};

TEST_F(LayerExport, FilesDirectoriesSymlinksAndModes) {
  ASSERT_EQ(mkdir((upper_ + "/src").c_str(), 0750), 0);
  write("src/main.c", "int main() { return 0; }\n");
  write("run.sh", "#!/bin/sh\n", 0755);
  ASSERT_EQ(symlink("src/main.c", (upper_ + "/link").c_str()), 0);
  auto cs = exportAndParse();
  const auto& c = cs.changes();
  ASSERT_EQ(c.count("src"), 1u);
  EXPECT_EQ(c.at("src").kind, Change::Kind::Dir);
  EXPECT_EQ(c.at("src").mode & 07777, 0750u);
  EXPECT_EQ(staged(cs, "src/main.c"), "int main() { return 0; }\n");
  EXPECT_EQ(c.at("run.sh").mode & 07777, 0755u);
  EXPECT_EQ(c.at("link").kind, Change::Kind::Symlink);
  EXPECT_EQ(c.at("link").target, "src/main.c");
}

TEST_F(LayerExport, WhiteoutsBecomeDeletions) {
  if (geteuid() != 0) GTEST_SKIP() << "creating an overlayfs whiteout (char device 0/0) needs root";
  ASSERT_EQ(mknod((upper_ + "/deleted.txt").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  auto cs = exportAndParse();
  ASSERT_EQ(cs.changes().count("deleted.txt"), 1u);
  EXPECT_EQ(cs.changes().at("deleted.txt").kind, Change::Kind::Whiteout);
}

TEST_F(LayerExport, OpaqueDirectoryIsMarked) {
  if (geteuid() != 0) GTEST_SKIP() << "setting trusted.overlay.opaque needs root";
  ASSERT_EQ(mkdir((upper_ + "/build").c_str(), 0755), 0);
  ASSERT_EQ(setxattr((upper_ + "/build").c_str(), "trusted.overlay.opaque", "y", 1, 0), 0)
      << "filesystem of /tmp lacks trusted xattrs";
  write("build/out.o", "obj");
  auto cs = exportAndParse();
  ASSERT_EQ(cs.changes().count("build"), 1u);
  EXPECT_TRUE(cs.changes().at("build").opaque);
  EXPECT_EQ(staged(cs, "build/out.o"), "obj");
}

TEST_F(LayerExport, LongNamesAndHardLinks) {
  std::string longDir(120, 'd');
  ASSERT_EQ(mkdir((upper_ + "/" + longDir).c_str(), 0755), 0);
  std::string longName = longDir + "/" + std::string(150, 'f');
  write(longName, "long");
  ASSERT_EQ(link((upper_ + "/" + longName).c_str(), (upper_ + "/hard").c_str()), 0);
  auto cs = exportAndParse();
  ASSERT_EQ(cs.changes().count(longName), 1u);
  EXPECT_EQ(staged(cs, longName), "long");
  ASSERT_EQ(cs.changes().count("hard"), 1u);
  EXPECT_EQ(staged(cs, "hard"), "long");
}

// FIFOs and sockets the agent creates reach the host, which lists them as
// skipped in the review (before, the export dropped them silently).
TEST_F(LayerExport, FifosAndSocketsReachTheHostAsSkippedEntries) {
  ASSERT_EQ(mkfifo((upper_ + "/pipe").c_str(), 0644), 0);
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sockPath = upper_ + "/agent.sock";
  ASSERT_LT(sockPath.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sockPath.c_str(), sockPath.size() + 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(sock);
  write("kept.txt", "kept");
  auto cs = exportAndParse();
  EXPECT_EQ(cs.changes().count("kept.txt"), 1u);
  EXPECT_EQ(cs.changes().count("pipe"), 0u);
  std::map<std::string, std::string> skipped;
  for (const auto& e : cs.skipped()) skipped[e.path] = e.reason;
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped["pipe"], "FIFO; only files, directories and symlinks are reviewed");
  EXPECT_NE(skipped["agent.sock"].find("only files, directories and symlinks are reviewed"), std::string::npos);
}

TEST_F(LayerExport, DeviceNodesReachTheHostAsSkippedEntries) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod of a character device needs root";
  ASSERT_EQ(mknod((upper_ + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  auto cs = exportAndParse();
  ASSERT_EQ(cs.skipped().size(), 1u);
  EXPECT_EQ(cs.skipped()[0].path, "null");
  EXPECT_EQ(cs.skipped()[0].reason, "device node; only files, directories and symlinks are reviewed");
}

TEST_F(LayerExport, SinkFailureStopsTheExport) {
  write("a", std::string(200000, 'x'));
  std::string error, skipped;
  EXPECT_FALSE(exportUpperLayer(upper_, [](std::string_view) { return false; }, error, skipped));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace airlock::guest
