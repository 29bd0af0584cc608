// An agent's saved state comes from the guest: a hostile guest's tar must
// leave nothing on the host but plain files, directories and symlinks that
// stay inside the state (issue 16, item 1 and its "hostile state" test).
#include "state/state_archive.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "support/scratch.h"
#include "support/tar_builder.h"

namespace airlock::state {
namespace {

namespace fs = std::filesystem;
using test::TarEntry;

const std::vector<std::string> kClaudeRoots = {".claude", ".claude.json"};

class StateArchive : public ::testing::Test {
 protected:
  /// Unpacks `entries` into dir()/state.
  Result<UnpackSummary> unpack(const std::vector<TarEntry>& entries, const StateLimits& limits = {}) {
    EXPECT_TRUE(writeFileAtomic(tar(), test::makeTar(entries), 0600));
    return unpackState(tar(), state(), kClaudeRoots, limits);
  }
  std::string tar() const { return dir_.path() + "/in.tar"; }
  std::string state() const { return dir_.path() + "/state"; }
  /// Every entry under state(): "path type" lines, sorted.
  std::string listing() const {
    std::vector<std::string> lines;
    for (const auto& e : fs::recursive_directory_iterator(state())) {
      struct stat st {};
      lstat(e.path().c_str(), &st);
      char type = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : S_ISLNK(st.st_mode) ? 'l' : '?';
      lines.push_back(e.path().lexically_relative(state()).string() + " " + type);
    }
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
  TempDir dir_ = test::scratchDir("airlock-state-");
};

TEST_F(StateArchive, KeepsTheAgentsFilesDirectoriesAndInsideSymlinks) {
  auto r = unpack({{".claude", 'd', "", "", 0755},
                   {".claude/projects", 'd', "", "", 0755},
                   {".claude/projects/-workspace", 'd', "", "", 0700},
                   {".claude/projects/-workspace/s1.jsonl", 'f', "{\"m\":1}\n", "", 0600},
                   {".claude/settings.json", 'f', "{}", "", 0644},
                   {".claude/latest", 'l', "", "projects/-workspace/s1.jsonl"},
                   {".claude/projects/-workspace/up", 'l', "", "../../settings.json"},
                   {".claude.json", 'f', "{\"hasCompletedOnboarding\":true}", "", 0644}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(listing(),
            ".claude d\n.claude.json f\n.claude/latest l\n.claude/projects d\n.claude/projects/-workspace d\n"
            ".claude/projects/-workspace/s1.jsonl f\n.claude/projects/-workspace/up l\n.claude/settings.json f\n");
  EXPECT_EQ(r->dropped, std::vector<std::string>{});
  EXPECT_EQ(r->entries, 8u);
  EXPECT_EQ(r->bytes, 8u + 2u + 31u);
  auto content = readFile(state() + "/.claude/projects/-workspace/s1.jsonl");
  ASSERT_TRUE(content);
  EXPECT_EQ(*content, "{\"m\":1}\n");
}

TEST_F(StateArchive, DropsDevicesFifosHardLinksSetuidBitsAndWhatIsNotState) {
  auto r = unpack({{".claude", 'd'},
                   {".claude/sda", 'b'},
                   {".claude/tty", 'c'},
                   {".claude/fifo", 'p'},
                   {".claude/tool", 'f', "#!/bin/sh\n", "", 04755},
                   {".claude/group-tool", 'f', "x", "", 02755},
                   {".claude/hard", 'h', "", ".claude/tool"},
                   {".bashrc", 'f', "evil\n"},
                   {"../outside", 'f', "x"},
                   {"/etc/cron.d/x", 'f', "x"},
                   {".claude/../.ssh/authorized_keys", 'f', "x"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(listing(), ".claude d\n.claude/group-tool f\n.claude/tool f\n");
  struct stat st {};
  ASSERT_EQ(stat((state() + "/.claude/tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u) << "the setuid bit survived";
  ASSERT_EQ(stat((state() + "/.claude/group-tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u) << "the setgid bit survived";
  EXPECT_EQ(r->droppedCount, 8u);
  std::string all;
  for (const auto& d : r->dropped) all += d + "\n";
  for (const char* word : {"block device", "character device", "FIFO", "hard link", "not part of the agent's state",
                           "absolute path"})
    EXPECT_NE(all.find(word), std::string::npos) << word << " in:\n" << all;
}

TEST_F(StateArchive, DropsSymlinksThatLeaveTheStateAndNeverWritesThroughOne) {
  auto r = unpack({{".claude", 'd'},
                   {".claude/shadow", 'l', "", "/etc/shadow"},
                   {".claude/up", 'l', "", "../../.."},
                   {".claude/deep", 'l', "", "projects/../../.."},
                   {".claude/self", 'l', "", "."},
                   {".claude/self/escape.txt", 'f', "x"},
                   // A link that is fine by itself, then a file written "through" it.
                   {".claude/projects", 'd'},
                   {".claude/projects/to-top", 'l', "", ".."},
                   {".claude/projects/to-top/x", 'f', "x"},
                   {".claude.json", 'l', "", ".claude/../../../etc/passwd"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(listing(), ".claude d\n.claude/projects d\n.claude/projects/to-top l\n.claude/self l\n");
  EXPECT_FALSE(fs::exists(state() + "/.claude/escape.txt"));
  EXPECT_FALSE(fs::exists(state() + "/.claude/x"));
  EXPECT_EQ(r->droppedCount, 6u);
}

// Every host walk over the state (removal, packing, listing) holds an fd
// per level, and pax headers are UTF-8: such entries never get in.
TEST_F(StateArchive, DropsDeepLongAndNonUtf8Paths) {
  std::string deep = ".claude";
  for (int i = 0; i < 64; ++i) deep += "/d";
  std::string longName = ".claude/" + std::string(250, 'n') + "/" + std::string(250, 'n') + "/" +
                         std::string(250, 'n') + "/" + std::string(250, 'n') + "/" + std::string(250, 'n');
  auto r = unpack({{".claude", 'd'},
                   {deep + "/f", 'f', "x"},
                   {longName, 'f', "x"},
                   {".claude/\xff\xfe", 'f', "x"},
                   {".claude/bell\a", 'f', "x"},
                   {".claude/ok-\xc3\xa9t\xc3\xa9", 'f', "x"},
                   {".claude/link", 'l', "", "\xff"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(listing(), ".claude d\n.claude/ok-\xc3\xa9t\xc3\xa9 f\n");
  EXPECT_EQ(r->droppedCount, 5u);
  // What is kept packs again.
  auto size = packState(state(), dir_.path() + "/out.tar", 1000);
  EXPECT_TRUE(size) << size.error().message;
}

TEST_F(StateArchive, AStateOverItsCapIsNotSavedAtAll) {
  StateLimits limits;
  limits.maxBytes = 1000;
  auto r = unpack({{".claude", 'd'}, {".claude/a", 'f', std::string(600, 'a')}, {".claude/b", 'f', std::string(600, 'b')}},
                  limits);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("over its cap"), std::string::npos) << r.error().message;
  EXPECT_FALSE(fs::exists(state())) << "a partial state was left";
  limits.maxBytes = 1 << 20;
  limits.maxEntries = 3;
  auto many = unpack({{".claude", 'd'}, {".claude/a", 'f'}, {".claude/b", 'f'}, {".claude/c", 'f'}}, limits);
  ASSERT_FALSE(many);
  EXPECT_NE(many.error().message.find("more than 3 entries"), std::string::npos) << many.error().message;
  EXPECT_FALSE(fs::exists(state()));
}

// Credentials and the user's imported settings are never kept, whatever
// the guest sends, and their absence is not worth a warning.
TEST_F(StateArchive, ExcludedPathsAreNeverKept) {
  EXPECT_TRUE(writeFileAtomic(tar(),
                              test::makeTar({{".claude", 'd'},
                                             {".claude/.credentials.json", 'f', "{\"accessToken\": \"sk-ant\"}"},
                                             {".claude/skills", 'd'},
                                             {".claude/skills/s/SKILL.md", 'f', "copy\n"},
                                             {".claude/skillsets", 'f', "kept: only a name prefix\n"},
                                             {".claude/history.jsonl", 'f', "{}\n"}}),
                              0600));
  auto r = unpackState(tar(), state(), kClaudeRoots, {}, {".claude/.credentials.json", ".claude/skills"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(listing(), ".claude d\n.claude/history.jsonl f\n.claude/skillsets f\n");
  EXPECT_EQ(r->droppedCount, 0u);
}

TEST_F(StateArchive, GarbageIsNotAState) {
  ASSERT_TRUE(writeFileAtomic(tar(), std::string(3000, 'x'), 0600));
  auto r = unpackState(tar(), state(), kClaudeRoots, {});
  ASSERT_FALSE(r);
  EXPECT_FALSE(fs::exists(state()));
}

TEST_F(StateArchive, PackingRoundTrips) {
  ASSERT_TRUE(unpack({{".claude", 'd', "", "", 0700},
                      {".claude/a.txt", 'f', "alpha", "", 0600},
                      {".claude/link", 'l', "", "a.txt"},
                      {".claude.json", 'f', "{}", "", 0644}}));
  const std::string packed = dir_.path() + "/out.tar";
  auto size = packState(state(), packed, 1000);
  ASSERT_TRUE(size) << size.error().message;
  EXPECT_GT(*size, 0u);
  const std::string again = dir_.path() + "/again";
  auto r = unpackState(packed, again, kClaudeRoots, {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->entries, 4u);
  EXPECT_EQ(r->dropped, std::vector<std::string>{});
  EXPECT_EQ(fs::read_symlink(again + "/.claude/link").string(), "a.txt");
  auto text = readFile(again + "/.claude/a.txt");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "alpha");
}

}  // namespace
}  // namespace airlock::state
