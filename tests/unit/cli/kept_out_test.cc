// What `airlock info` says about the paths the snapshot keeps out: counts
// always, names only with --excluded.

#include "cli/kept_out.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/paths.h"

namespace airlock::cli {
namespace {

namespace fs = std::filesystem;

void write(const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << content;
}

// Issue 12 item 11: info reports how many paths are kept out and why; the
// names appear only on request, and the content checks only with --excluded.
TEST(InfoKeptOut, CountsAlwaysNamesOnlyWithExcluded) {
  auto tmp = TempDir::create(fs::temp_directory_path().string(), "airlock-kept-out-");
  ASSERT_TRUE(tmp) << tmp.error().message;
  std::string ws = tmp->path();
  write(ws + "/.env", "A=1");
  ASSERT_EQ(::link((ws + "/.env").c_str(), (ws + "/alias-of-dotenv.txt").c_str()), 0);
  write(ws + "/notes-with-key.txt", std::string("-----BEGIN ") + "EC PRIVATE KEY-----\nMHcC\n");
  write(ws + "/vendor/x.c", "x");
  config::Settings settings;
  settings.excludes.push_back({"vendor/", config::Layer::kFlag});

  auto quick = keptOut(ws, settings, false);
  ASSERT_TRUE(quick) << quick.error().message;
  std::string text = keptOutText(*quick, false);
  EXPECT_NE(text.find("3 paths kept out of the snapshot: 1 secret name, 1 hard link to a kept-out file, 1 ignored"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("alias-of-dotenv"), std::string::npos) << "names only on request";
  auto j = keptOutJson(*quick, false);
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["by_reason"]["hard_link"], 1);
  EXPECT_FALSE(j.contains("paths"));
  EXPECT_FALSE(j["files_read"].get<bool>());

  auto full = keptOut(ws, settings, true);
  ASSERT_TRUE(full) << full.error().message;
  text = keptOutText(*full, true);
  EXPECT_NE(text.find("4 paths kept out of the snapshot: 1 secret name, 1 private key"), std::string::npos) << text;
  EXPECT_NE(text.find("alias-of-dotenv.txt  (hard link to a kept-out file)"), std::string::npos) << text;
  EXPECT_NE(text.find("notes-with-key.txt  (private key)"), std::string::npos) << text;
  j = keptOutJson(*full, true);
  EXPECT_EQ(j["by_reason"]["private_key"], 1);
  ASSERT_TRUE(j.contains("paths"));
  EXPECT_EQ(j["paths"].size(), 4u);
}

// Issue 18: a repository's hooks are kept out and its config is copied
// sanitized; --excluded names both, and says what the config lost.
TEST(InfoKeptOut, NamesTheGitHooksAndTheSanitizedConfig) {
  auto tmp = TempDir::create(fs::temp_directory_path().string(), "airlock-kept-out-");
  ASSERT_TRUE(tmp) << tmp.error().message;
  std::string ws = tmp->path();
  write(ws + "/.git/HEAD", "ref: refs/heads/main\n");
  write(ws + "/.git/hooks/pre-commit", "#!/bin/sh\n");
  write(ws + "/.git/config", "[core]\n\tsshCommand = ssh -i key\n[credential]\n\thelper = store\n");
  fs::create_directories(ws + "/.git/objects");
  auto full = keptOut(ws, config::Settings{}, true);
  ASSERT_TRUE(full) << full.error().message;
  std::string text = keptOutText(*full, true);
  EXPECT_NE(text.find(".git/hooks  (git hooks directory)"), std::string::npos) << text;
  EXPECT_NE(text.find(".git/config  (copied without its credentials and commands)"), std::string::npos) << text;
  EXPECT_NE(text.find("credentials and commands removed from 1 git config file"), std::string::npos) << text;
}

}  // namespace
}  // namespace airlock::cli
