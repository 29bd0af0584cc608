#include "image/release_archive.h"
#include "image/tar_member.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"

namespace airlock::image {
namespace {

namespace fs = std::filesystem;

/// An "archives" entry as @charmland/crush@0.96.1's package.json has it.
std::string manifest(const std::string& entry) {
  return R"({"name": "@charmland/crush", "version": "0.96.1", "archives": {"linux-x64": )" + entry + "}}";
}

const std::string kDigest(64, 'a');

std::string entry(const std::string& name = "crush_0.96.1_Linux_x86_64.tar.gz",
                  const std::string& url = "https://github.com/charmbracelet/crush/releases/download/v0.96.1/x.tar.gz",
                  const std::string& digest = kDigest, const std::string& wrapped = "crush_0.96.1_Linux_x86_64",
                  const std::string& format = "tar.gz", const std::string& algorithm = "sha256") {
  return R"({"name": ")" + name + R"(", "url": ")" + url + R"(", "bins": ["crush"], "format": ")" + format +
         R"(", "checksum": {"algorithm": ")" + algorithm + R"(", "digest": ")" + digest + R"("}, "wrappedIn": ")" +
         wrapped + R"("})";
}

TEST(ReleaseArchive, ReadsTheLinuxEntryOfThePackage) {
  auto a = parseReleaseArchive(manifest(entry()), "linux-x64", "@charmland/crush@0.96.1");
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->name, "crush_0.96.1_Linux_x86_64.tar.gz");
  EXPECT_EQ(a->url, "https://github.com/charmbracelet/crush/releases/download/v0.96.1/x.tar.gz");
  EXPECT_EQ(a->sha256, kDigest);
  EXPECT_EQ(a->wrappedIn, "crush_0.96.1_Linux_x86_64");
}

// The package.json comes from the registry: every field that becomes a
// path, a URL or a check is held to a plain form.
TEST(ReleaseArchive, RefusesAnEntryThatIsNotPlain) {
  const std::string https = "https://example.org/x.tar.gz";
  const std::pair<std::string, std::string> cases[] = {
      {manifest(entry("../../etc/passwd")), "\"name\" is not a plain file name"},
      {manifest(entry("a/b.tar.gz")), "\"name\" is not a plain file name"},
      {manifest(entry("..")), "\"name\" is not a plain file name"},
      {manifest(entry("-rf.tar.gz")), "\"name\" is not a plain file name"},
      {manifest(entry("x y.tar.gz")), "\"name\" is not a plain file name"},
      {manifest(entry("x.tar.gz", "http://github.com/x.tar.gz")), "\"url\" is not an https URL"},
      {manifest(entry("x.tar.gz", "file:///etc/passwd")), "\"url\" is not an https URL"},
      {manifest(entry("x.tar.gz", "https://a/x\\n.tar.gz")), "\"url\" is not an https URL"},
      {manifest(entry("x.tar.gz", "https://a/\\u001b]0;owned\\u0007.tar.gz")), "\"url\" is not an https URL"},
      {manifest(entry("x.tar.gz", https, std::string(63, 'a'))), "\"checksum\" is not a sha256 digest"},
      {manifest(entry("x.tar.gz", https, std::string(64, 'A'))), "\"checksum\" is not a sha256 digest"},
      {manifest(entry("x.tar.gz", https, kDigest, "w", "tar.gz", "md5")), "\"checksum\" is not a sha256 digest"},
      {manifest(entry("x.tar.gz", https, kDigest, "../up")), "\"wrappedIn\" is not a plain folder name"},
      {manifest(entry("x.tar.gz", https, kDigest, "w", "zip")), "\"format\" is not tar.gz"},
      {R"({"archives": {"darwin-arm64": {}}})", "has no entry for linux-x64"},
      {R"({"archives": []})", "is missing"},
      {R"({"name": "x"})", "is missing"},
      {"not json", "is missing"},
  };
  for (const auto& [json, why] : cases) {
    auto a = parseReleaseArchive(json, "linux-x64", "@charmland/crush@0.96.1");
    ASSERT_FALSE(a.has_value()) << json;
    EXPECT_EQ(a.error().code, exit_code::kImage);
    EXPECT_NE(a.error().message.find(why), std::string::npos) << a.error().message;
    EXPECT_NE(a.error().message.find("@charmland/crush@0.96.1"), std::string::npos) << a.error().message;
  }
}

class ReleaseArchiveFiles : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("airlock-archive-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cache");
    fs::create_directories(dir_ / "from");
    fs::create_directories(dir_ / "tree/crush_1_Linux_x86_64");
    fs::create_directories(dir_ / "work");
    std::ofstream(dir_ / "tree/crush_1_Linux_x86_64/crush") << "#!/bin/sh\necho crush\n";
    auto tar = runCommand({"tar", "--create", "--gzip", "--file", (dir_ / "from/crush_1.tar.gz").string(),
                           "--directory", (dir_ / "tree").string(), "crush_1_Linux_x86_64"});
    ASSERT_TRUE(tar && tar->exitCode == 0);
    auto digest = sha256File((dir_ / "from/crush_1.tar.gz").string());
    ASSERT_TRUE(digest.has_value());
    archive_ = {"crush_1.tar.gz", "https://unreachable.invalid/crush_1.tar.gz", *digest, "crush_1_Linux_x86_64"};
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<std::string> fetch(const ReleaseArchive& a) {
    return fetchReleaseArchive((dir_ / "cache").string(), a, (dir_ / "from").string(), "crush", nullptr);
  }

  fs::path dir_;
  ReleaseArchive archive_;
};

TEST_F(ReleaseArchiveFiles, AFileFromADirectoryIsCheckedCachedAndItsProgramExtracted) {
  auto got = fetch(archive_);
  ASSERT_TRUE(got.has_value()) << got.error().message;
  EXPECT_EQ(*got, releaseArchivePath((dir_ / "cache").string(), archive_));
  EXPECT_EQ(sha256File(*got).value_or(""), archive_.sha256);
  const std::string dest = (dir_ / "work/crush").string();
  auto done = extractTarMember(*got, "crush_1_Linux_x86_64/crush", dest, (dir_ / "work").string(), 0755, "hint");
  ASSERT_TRUE(done.has_value()) << done.error().message;
  struct stat st {};
  ASSERT_EQ(::lstat(dest.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  // Cached: the directory is not read again.
  fs::remove(dir_ / "from/crush_1.tar.gz");
  EXPECT_TRUE(fetch(archive_).has_value());
}

// A file that is not the one the npm package names (another build, a
// tampered download) never reaches the cache or an image.
TEST_F(ReleaseArchiveFiles, AFileWithAnotherDigestIsRefusedAndNotKept) {
  ReleaseArchive other = archive_;
  other.sha256 = std::string(64, '0');
  auto got = fetch(other);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, exit_code::kImage);
  EXPECT_NE(got.error().message.find("has SHA-256 " + archive_.sha256 + ", but its npm package names " + other.sha256),
            std::string::npos)
      << got.error().message;
  EXPECT_FALSE(pathExists(releaseArchivePath((dir_ / "cache").string(), other)));
  auto left = listDir((dir_ / "cache/downloads/archives").string());
  ASSERT_TRUE(left.has_value());
  EXPECT_EQ(*left, std::vector<std::string>{".lock"});
}

TEST_F(ReleaseArchiveFiles, ASymlinkOrAMissingFileInTheDirectoryIsRefused) {
  fs::rename(dir_ / "from/crush_1.tar.gz", dir_ / "real.tar.gz");
  auto missing = fetch(archive_);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos) << missing.error().message;
  fs::create_symlink(dir_ / "real.tar.gz", dir_ / "from/crush_1.tar.gz");
  auto linked = fetch(archive_);
  ASSERT_FALSE(linked.has_value());
  EXPECT_EQ(linked.error().code, exit_code::kImage);
}

// A download that fails says how to bring the file in by hand.
TEST_F(ReleaseArchiveFiles, AFailedDownloadNamesTheFromOption) {
  auto got = fetchReleaseArchive((dir_ / "cache").string(), archive_, "", "crush", nullptr);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, exit_code::kImage);
  EXPECT_NE(got.error().message.find("cannot download https://unreachable.invalid/crush_1.tar.gz: "), std::string::npos)
      << got.error().message;
  EXPECT_NE(got.error().message.find("`airlock image build crush --from DIR`"), std::string::npos)
      << got.error().message;
}

// The archive is the registry's and GitHub's input: a member that is a
// symlink (to a host file) or absent is refused.
TEST_F(ReleaseArchiveFiles, AMemberThatIsASymlinkOrAbsentIsRefused) {
  fs::remove(dir_ / "tree/crush_1_Linux_x86_64/crush");
  fs::create_symlink("/etc/shadow", dir_ / "tree/crush_1_Linux_x86_64/crush");
  const std::string evil = (dir_ / "evil.tar.gz").string();
  auto tar = runCommand(
      {"tar", "--create", "--gzip", "--file", evil, "--directory", (dir_ / "tree").string(), "crush_1_Linux_x86_64"});
  ASSERT_TRUE(tar && tar->exitCode == 0);
  const std::string dest = (dir_ / "work/crush").string();
  auto linked = extractTarMember(evil, "crush_1_Linux_x86_64/crush", dest, (dir_ / "work").string(), 0755, "hint");
  ASSERT_FALSE(linked.has_value());
  EXPECT_NE(linked.error().message.find("is not a regular file; hint"), std::string::npos) << linked.error().message;
  EXPECT_FALSE(fs::exists(fs::symlink_status(dest)));
  auto absent = extractTarMember(evil, "crush_1_Linux_x86_64/other", dest, (dir_ / "work").string(), 0755, "hint");
  ASSERT_FALSE(absent.has_value());
  EXPECT_NE(absent.error().message.find("has no file crush_1_Linux_x86_64/other"), std::string::npos);
}

}  // namespace
}  // namespace airlock::image
