#include "workspace/changeset.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "common/sha256.h"
#include "test_util.h"

namespace airlock::workspace {
namespace {

using test::makeTar;
using test::Scenario;
using test::scratch;
using test::TarEntry;
using test::writeFile;

Result<ChangeSet> parse(const std::string& tar, const std::string& dir, TarLimits limits = {}) {
  return ChangeSet::fromTarBuffer(tar, dir + "/staged", limits);
}

TEST(ChangeSetTar, ParsesOciLayer) {
  auto d = scratch();
  auto cs = parse(makeTar({{"./", 'd', "", "", 0755},
                           {"src/", 'd', "", "", 0755},
                           {"src/new.c", 'f', "hello\n", "", 0644},
                           {"src/.wh.old.c", 'f'},
                           {"link", 'l', "", "src/new.c", 0777},
                           {"hard", 'h', "", "src/new.c"},
                           {"gen/", 'd', "", "", 0700},
                           {"gen/.wh..wh..opq", 'f'}}),
                  d.path());
  ASSERT_TRUE(cs) << cs.error().message;
  const auto& m = cs->changes();
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m.at("src/new.c").sha256, sha256Hex("hello\n"));
  EXPECT_EQ(test::readAll(cs->stagedPath(m.at("src/new.c"))), "hello\n");
  EXPECT_EQ(m.at("src/old.c").kind, Change::Kind::Whiteout);
  EXPECT_EQ(m.at("link").target, "src/new.c");
  EXPECT_EQ(m.at("hard").sha256, sha256Hex("hello\n"));
  EXPECT_TRUE(m.at("gen").opaque);
  EXPECT_EQ(m.at("gen").mode, 0700u);
}

struct BadCase {
  const char* what;
  std::vector<TarEntry> entries;
  const char* expect;  // substring of the error
};

TEST(ChangeSetTar, RejectsHostileStreams) {
  std::vector<BadCase> cases = {
      {"dotdot", {{"../escape", 'f', "x"}}, "'..'"},
      {"nested dotdot", {{"a/../../escape", 'f', "x"}}, "'..'"},
      {"absolute", {{"/etc/passwd", 'f', "x"}}, "absolute"},
      {"through symlink", {{"x", 'l', "", "/etc"}, {"x/passwd", 'f', "root::0:0"}}, "symlink"},
      {"below file", {{"f", 'f', "x"}, {"f/g", 'f', "y"}}, "file"},
      {"char device", {{"null", 'c'}}, "device"},
      {"block device", {{"sda", 'b'}}, "device"},
      {"fifo", {{"pipe", 'p'}}, "FIFO"},
      {"hard link outside", {{"h", 'h', "", "/etc/shadow"}}, "hard link"},
      {"hard link dotdot", {{"h", 'h', "", "../../etc/shadow"}}, "hard link"},
      {"hard link forward", {{"h", 'h', "", "later"}, {"later", 'f', "x"}}, "earlier"},
      {"duplicate", {{"a", 'f', "x"}, {"a", 'f', "y"}}, "twice"},
      {"whiteout meta", {{".wh..wh.plnk", 'f'}}, "whiteout"},
      {"whiteout dotdot", {{"a/.wh...", 'f'}}, "whiteout"},
  };
  for (const auto& c : cases) {
    auto d = scratch();
    auto cs = parse(makeTar(c.entries), d.path());
    ASSERT_FALSE(cs) << c.what;
    EXPECT_NE(cs.error().message.find(c.expect), std::string::npos) << c.what << ": " << cs.error().message;
  }
}

TEST(ChangeSetTar, SizeLimits) {
  auto d = scratch();
  TarLimits lim;
  lim.maxEntryBytes = 10;
  auto cs = parse(makeTar({{"big", 'f', std::string(11, 'x')}}), d.path(), lim);
  ASSERT_FALSE(cs);
  EXPECT_NE(cs.error().message.find("'big'"), std::string::npos);
  auto d2 = scratch();
  lim.maxEntryBytes = 100;
  lim.maxTotalBytes = 15;
  cs = parse(makeTar({{"a", 'f', std::string(10, 'x')}, {"b", 'f', std::string(10, 'y')}}), d2.path(), lim);
  ASSERT_FALSE(cs);
  EXPECT_NE(cs.error().message.find("total"), std::string::npos);
  auto d3 = scratch();
  lim = {};
  lim.maxEntries = 2;
  cs = parse(makeTar({{"a", 'f'}, {"b", 'f'}, {"c", 'f'}}), d3.path(), lim);
  ASSERT_FALSE(cs);
}

TEST(ChangeSetTar, GarbageIsAnError) {
  auto d = scratch();
  auto cs = parse(std::string(1024, 'z'), d.path());
  EXPECT_FALSE(cs);
}

TEST(ChangeSetTar, WeirdNamesSurvive) {
  auto d = scratch();
  auto cs = parse(makeTar({{"new\nline", 'f', "1"}, {"bad\xff\xfe", 'f', "2"}, {"-rf", 'f', "3"}}), d.path());
  ASSERT_TRUE(cs) << cs.error().message;
  EXPECT_TRUE(cs->changes().count("new\nline"));
  EXPECT_TRUE(cs->changes().count("bad\xff\xfe"));
  EXPECT_TRUE(cs->changes().count("-rf"));
}

TEST(ChangeSetDirs, FromDirectories) {
  Scenario s;
  writeFile(s.ws + "/keep", "same");
  writeFile(s.ws + "/mod", "old");
  writeFile(s.ws + "/gone/a", "a");
  writeFile(s.ws + "/gone/b", "b");
  writeFile(s.ws + "/chmod", "x", 0644);
  s.snapshot();
  std::string after = s.dir.path() + "/after";
  std::filesystem::copy(s.session + "/snapshot", after, std::filesystem::copy_options::recursive |
                                                         std::filesystem::copy_options::copy_symlinks);
  writeFile(after + "/mod", "new");
  writeFile(after + "/added", "+");
  std::filesystem::remove_all(after + "/gone");
  ::chmod((after + "/chmod").c_str(), 0755);
  s.loadDirs(after);
  const auto& m = s.changes->changes();
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.at("gone").kind, Change::Kind::Whiteout);
  EXPECT_FALSE(m.count("gone/a")) << "only the top-most removed entry gets a whiteout";
  EXPECT_EQ(m.at("mod").sha256, sha256Hex("new"));
  EXPECT_EQ(m.at("chmod").mode, 0755u);
  EXPECT_TRUE(m.count("added"));
}

}  // namespace
}  // namespace airlock::workspace
