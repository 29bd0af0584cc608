// The user's own agent settings (issue 16, item 2): what is copied from the
// host's home, what is left out and said, and the tar the guest unpacks.

#include "state/settings_import.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "state/state_archive.h"
#include "support/scratch.h"

namespace airlock::state {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

void put(const std::string& path, const std::string& content, mode_t mode = 0644) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
  ::chmod(path.c_str(), mode);
}

const SettingsEntry* find(const ImportedSettings& s, const std::string& path) {
  for (const auto& e : s.entries)
    if (e.path == path) return &e;
  return nullptr;
}

bool said(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

class SettingsImport_ : public ::testing::Test {
 protected:
  void SetUp() override { home_ = fs::canonical(dir_.path()).string(); }
  ImportedSettings import(const std::vector<agents::SettingsImport>& settings, const SettingsLimits& limits = {}) {
    return importSettings(home_, settings, {"ANTHROPIC_BASE_URL", "CLAUDE_*", "PATH"}, {home_ + "/.local/share/airlock"},
                          limits);
  }
  TempDir dir_ = test::scratchDir();
  std::string home_;
};

// settings.json keeps the spec's keys only; its env block loses what may
// hold a secret and what airlock sets; every drop is said.
TEST_F(SettingsImport_, AJsonFileKeepsTheListedKeysAndASafeEnv) {
  put(home_ + "/.claude/settings.json", R"({
    "model": "opus", "apiKeyHelper": "/home/me/bin/get-key", "hooks": {"Stop": []},
    "env": {"EDITOR": "vim", "GITHUB_TOKEN": "ghp_x", "ANTHROPIC_BASE_URL": "http://corp", "CLAUDE_CODE_X": "1"}})");
  auto s = import({{".claude/settings.json", {"model", "hooks", "env"}}});
  const SettingsEntry* e = find(s, ".claude/settings.json");
  ASSERT_NE(e, nullptr);
  json j = json::parse(e->content);
  EXPECT_EQ(j, json::parse(R"({"model": "opus", "hooks": {"Stop": []}, "env": {"EDITOR": "vim"}})"));
  EXPECT_EQ(e->content.find("ghp_x"), std::string::npos);
  EXPECT_TRUE(said(s.dropped, "apiKeyHelper (not on the agent's list"));
  EXPECT_TRUE(said(s.dropped, "env.GITHUB_TOKEN (may hold a secret)"));
  EXPECT_TRUE(said(s.dropped, "env.ANTHROPIC_BASE_URL (airlock sets or forwards it"));
  EXPECT_TRUE(said(s.dropped, "env.CLAUDE_CODE_X (airlock sets or forwards it"));
  EXPECT_EQ(s.imported, std::vector<std::string>{"~/.claude/settings.json"});
  // The parent directory goes first, once.
  ASSERT_NE(find(s, ".claude"), nullptr);
  EXPECT_TRUE(find(s, ".claude")->directory);
  EXPECT_EQ(s.entries.front().path, ".claude");
}

TEST_F(SettingsImport_, AJsonFileThatIsNotAnObjectIsLeftOutAndSaid) {
  put(home_ + "/.claude/settings.json", "[1, 2]");
  auto s = import({{".claude/settings.json", {"model"}}});
  EXPECT_EQ(find(s, ".claude/settings.json"), nullptr);
  EXPECT_TRUE(said(s.dropped, "~/.claude/settings.json: not valid JSON, or not a JSON object"));
}

// Gemini's settings.json may carry comments.
TEST_F(SettingsImport_, CommentsInAJsonFileAreAllowed) {
  put(home_ + "/.gemini/settings.json", "{\n  // mine\n  \"ui\": {\"theme\": \"Dracula\"}\n}\n");
  auto s = import({{".gemini/settings.json", {"ui"}}});
  ASSERT_NE(find(s, ".gemini/settings.json"), nullptr);
  EXPECT_EQ(json::parse(find(s, ".gemini/settings.json")->content)["ui"]["theme"], "Dracula");
}

// A directory comes whole: files, subdirectories, the x bit of a script;
// secret files, FIFOs and names that are not plain UTF-8 stay out and are said.
TEST_F(SettingsImport_, ADirectoryComesWithoutSecretsOrSpecialFiles) {
  put(home_ + "/.claude/skills/pdf/SKILL.md", "# PDF\n");
  put(home_ + "/.claude/skills/pdf/run.sh", "#!/bin/sh\n", 0755);
  put(home_ + "/.claude/skills/pdf/.env", "KEY=1\n");
  put(home_ + "/.claude/skills/pdf/id_rsa", std::string("-----BEGIN OPENSSH ") + "PRIVATE KEY-----\n");
  put(home_ + "/.claude/skills/bad\x01name", "x");
  ASSERT_EQ(::mkfifo((home_ + "/.claude/skills/pipe").c_str(), 0600), 0);
  auto s = import({{".claude/skills", {}}});
  ASSERT_NE(find(s, ".claude/skills/pdf/SKILL.md"), nullptr);
  EXPECT_EQ(find(s, ".claude/skills/pdf/SKILL.md")->content, "# PDF\n");
  ASSERT_NE(find(s, ".claude/skills/pdf/run.sh"), nullptr);
  EXPECT_TRUE(find(s, ".claude/skills/pdf/run.sh")->executable);
  EXPECT_FALSE(find(s, ".claude/skills/pdf/SKILL.md")->executable);
  EXPECT_TRUE(find(s, ".claude/skills/pdf")->directory);
  EXPECT_EQ(find(s, ".claude/skills/pdf/.env"), nullptr);
  EXPECT_EQ(find(s, ".claude/skills/pdf/id_rsa"), nullptr);
  EXPECT_EQ(find(s, ".claude/skills/pipe"), nullptr);
  EXPECT_TRUE(said(s.dropped, "pdf/.env: a secret file"));
  EXPECT_TRUE(said(s.dropped, "pdf/id_rsa: a secret file"));
  EXPECT_TRUE(said(s.dropped, "pipe: not a regular file or directory"));
  EXPECT_TRUE(said(s.dropped, "not plain UTF-8"));
  EXPECT_EQ(s.imported, std::vector<std::string>{"~/.claude/skills (2 files)"});
}

// Dotfile managers make symlinks: they are followed on the host (the
// guest gets plain files); a missing path is no error.
TEST_F(SettingsImport_, SymlinksAreFollowedAndMissingPathsSkipped) {
  put(home_ + "/dotfiles/CLAUDE.md", "Be brief.\n");
  put(home_ + "/dotfiles/commands/fix.md", "Fix it.\n");
  fs::create_directories(home_ + "/.claude");
  fs::create_symlink(home_ + "/dotfiles/CLAUDE.md", home_ + "/.claude/CLAUDE.md");
  fs::create_symlink("../dotfiles/commands", home_ + "/.claude/commands");
  auto s = import({{".claude/CLAUDE.md", {}}, {".claude/commands", {}}, {".claude/agents", {}}});
  ASSERT_NE(find(s, ".claude/CLAUDE.md"), nullptr);
  EXPECT_EQ(find(s, ".claude/CLAUDE.md")->content, "Be brief.\n");
  ASSERT_NE(find(s, ".claude/commands/fix.md"), nullptr);
  EXPECT_TRUE(s.dropped.empty()) << s.dropped.front();
  EXPECT_EQ(s.imported.size(), 2u);
}

// A link under an innocent name to a secret, or a key inside any file,
// stays out all the same.
TEST_F(SettingsImport_, LinksToSecretsAndPrivateKeysStayOut) {
  put(home_ + "/.ssh/id_ed25519", "key material\n");
  put(home_ + "/.aws/credentials", "[default]\n");
  put(home_ + "/notes/pasted.md", std::string("-----BEGIN OPENSSH ") + "PRIVATE KEY-----\nabc\n");
  put(home_ + "/.claude/skills/s/SKILL.md", "# S\n");
  fs::create_symlink(home_ + "/.ssh/id_ed25519", home_ + "/.claude/skills/s/helper.txt");
  fs::create_symlink(home_ + "/.aws", home_ + "/.claude/skills/cloud");
  fs::create_symlink(home_ + "/notes/pasted.md", home_ + "/.claude/skills/s/notes.md");
  fs::create_symlink(home_ + "/.aws/credentials", home_ + "/.claude/CLAUDE.md");
  auto s = import({{".claude/CLAUDE.md", {}}, {".claude/skills", {}}});
  EXPECT_EQ(find(s, ".claude/CLAUDE.md"), nullptr);
  EXPECT_EQ(find(s, ".claude/skills/s/helper.txt"), nullptr);
  EXPECT_EQ(find(s, ".claude/skills/cloud"), nullptr);
  EXPECT_EQ(find(s, ".claude/skills/cloud/credentials"), nullptr);
  EXPECT_EQ(find(s, ".claude/skills/s/notes.md"), nullptr);
  ASSERT_NE(find(s, ".claude/skills/s/SKILL.md"), nullptr);
  EXPECT_TRUE(said(s.dropped, "~/.claude/CLAUDE.md: a secret file by its real path"));
  EXPECT_TRUE(said(s.dropped, "helper.txt: a secret file by its real path"));
  EXPECT_TRUE(said(s.dropped, "cloud: a secret file by its real path"));
  EXPECT_TRUE(said(s.dropped, "notes.md: holds a private key"));
  for (const auto& e : s.entries) EXPECT_EQ(e.content.find("key material"), std::string::npos) << e.path;
}

// What a reviewer got through: secrets by their path under $HOME (a spec
// naming ~/.aws, a link to ~/.config), credentials in env values, a
// skill's .git, hard links, links into /proc and into airlock's own files,
// and a symlink loop copying a skill over and over.
TEST_F(SettingsImport_, SecretsByPathValueLinkOrLoopStayOut) {
  put(home_ + "/.aws/credentials", "[default]\n");
  put(home_ + "/.config/gh/hosts.yml", "oauth_token: gho_x\n");
  put(home_ + "/.local/share/airlock/secrets/token", "s3cret\n");
  put(home_ + "/.claude/skills/s/SKILL.md", "# S\n");
  put(home_ + "/.claude/skills/s/.git/config", "[remote]\nurl = https://x:ghp_y@github.com/a/b\n");
  fs::create_symlink(home_ + "/.config", home_ + "/.claude/skills/cfg");
  fs::create_symlink("/proc/self/environ", home_ + "/.claude/skills/env.txt");
  fs::create_symlink(home_ + "/.local/share/airlock", home_ + "/.claude/skills/al");
  fs::create_symlink(".", home_ + "/.claude/skills/s/self");
  fs::create_hard_link(home_ + "/.aws/credentials", home_ + "/.claude/skills/notes.txt");
  put(home_ + "/.claude/settings.json", R"({"env": {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer x",
    "HTTPS_PROXY": "http://me:pw@proxy:3128", "GH_PAT": "x", "MYSQL_PWD": "x", "SENTRY_DSN": "https://k@s.io/1",
    "TOOL_URL": "https://example.com/api", "NODE_PATH": "/opt/node", "EDITOR": "vi"}})");
  auto s = import({{".aws", {}}, {".claude/skills", {}}, {".claude/settings.json", {"env"}}});
  for (const auto& e : s.entries) {
    EXPECT_FALSE(e.path.starts_with(".aws")) << e.path;
    EXPECT_FALSE(e.path.ends_with("hosts.yml")) << e.path;
    EXPECT_EQ(e.path.find(".git"), std::string::npos) << e.path;
    EXPECT_EQ(e.path.find("/al"), std::string::npos) << e.path;
    EXPECT_EQ(e.path.find("env.txt"), std::string::npos) << e.path;
    EXPECT_EQ(e.path.find("notes.txt"), std::string::npos) << e.path;
    EXPECT_EQ(e.path.find("/self"), std::string::npos) << e.path;
  }
  ASSERT_NE(find(s, ".claude/skills/s/SKILL.md"), nullptr);
  EXPECT_TRUE(said(s.dropped, "~/.aws: a secret file"));
  EXPECT_TRUE(said(s.dropped, "cfg/gh/hosts.yml: a secret file by its real path"));
  EXPECT_TRUE(said(s.dropped, ".git: git metadata"));
  EXPECT_TRUE(said(s.dropped, "env.txt: a link to /proc"));
  EXPECT_TRUE(said(s.dropped, "al: a link into airlock's own files"));
  EXPECT_TRUE(said(s.dropped, "self: a directory already copied under another name"));
  EXPECT_TRUE(said(s.dropped, "notes.txt: a hard link"));
  json env = json::parse(find(s, ".claude/settings.json")->content)["env"];
  EXPECT_EQ(env, json::parse(R"({"TOOL_URL": "https://example.com/api", "NODE_PATH": "/opt/node", "EDITOR": "vi"})"));
  for (const char* name : {"OTEL_EXPORTER_OTLP_HEADERS", "HTTPS_PROXY", "GH_PAT", "MYSQL_PWD", "SENTRY_DSN"})
    EXPECT_TRUE(said(s.dropped, std::string("env.") + name + " (may hold a secret)")) << name;
}

// What a second review got through: an agent's own login behind an
// innocent link, credentials in non-string env values and in kept keys,
// case and prefix variants, JSON nested to crash the copy, and a fan of
// links that made millions of report lines.
TEST_F(SettingsImport_, LoginsNestedJsonAndLinkFansStayBounded) {
  put(home_ + "/.claude/.credentials.json", "{\"claudeAiOauth\": {\"accessToken\": \"sk-ant-oat01-x\"}}");
  put(home_ + "/src/skills/review/SKILL.md", "# R\n");
  fs::create_directories(home_ + "/.claude");
  fs::create_symlink("../src/skills", home_ + "/.claude/skills");
  fs::create_symlink("../../../.claude/.credentials.json", home_ + "/src/skills/review/notes.md");
  put(home_ + "/.claude/settings.json", R"({
    "env": {"OBJ": {"v": "sk-ant-api03-x"}, "ARR": ["ghp_x"], "H": "authorization: token abc",
            "U": "https://ghu_x@github.com/a", "Q": "https://h/?password=p", "EDITOR": "vi"},
    "hooks": {"Stop": [{"command": "curl -H 'Authorization: Bearer sk-x' https://h"}]},
    "model": "opus"})");
  auto s = import({{".claude/skills", {}}, {".claude/settings.json", {"env", "hooks", "model"}}});
  for (const auto& e : s.entries) EXPECT_EQ(e.content.find("sk-ant-oat01"), std::string::npos) << e.path;
  EXPECT_TRUE(said(s.dropped, "notes.md: a secret file by its real path"));
  json j = json::parse(find(s, ".claude/settings.json")->content);
  EXPECT_EQ(j, json::parse(R"({"env": {"EDITOR": "vi"}, "model": "opus"})"));
  EXPECT_TRUE(said(s.dropped, "env.OBJ (not a string)"));
  EXPECT_TRUE(said(s.dropped, "hooks (holds what looks like a credential)"));
  for (const char* name : {"H", "U", "Q"}) EXPECT_TRUE(said(s.dropped, std::string("env.") + name + " (may")) << name;

  // Nested far past any real settings file: left out, no crash.
  put(home_ + "/.gemini/settings.json", "{\"ui\": " + std::string(200000, '[') + std::string(200000, ']') + "}");
  auto deep = import({{".gemini/settings.json", {"ui"}}});
  EXPECT_EQ(find(deep, ".gemini/settings.json"), nullptr);
  EXPECT_TRUE(said(deep.dropped, "nested deeper than 64 levels"));

  // 11 directories, each with two links to the next and bad names: each
  // directory is walked once, and the report stays short.
  for (int i = 0; i < 11; ++i) {
    const std::string d = home_ + "/fan/d" + std::to_string(i);
    fs::create_directories(d);
    for (int k = 0; k < 50; ++k) put(d + "/bad\xff" + std::to_string(k), "x");
    if (i > 0) {
      fs::create_symlink(d, home_ + "/fan/d" + std::to_string(i - 1) + "/a");
      fs::create_symlink(d, home_ + "/fan/d" + std::to_string(i - 1) + "/b");
    }
  }
  fs::create_symlink(home_ + "/fan/d0", home_ + "/.claude/commands");
  auto fan = import({{".claude/commands", {}}});
  EXPECT_LE(fan.dropped.size(), 21u);
  EXPECT_TRUE(said(fan.dropped, "more left out"));
}

// A name or key a terminal would act on is shown escaped.
TEST_F(SettingsImport_, DroppedLinesCarryNoTerminalEscapes) {
  put(home_ + "/.claude/settings.json", "{\"\\u001b]0;owned\\u0007\": 1}");
  auto s = import({{".claude/settings.json", {"model"}}});
  ASSERT_EQ(s.dropped.size(), 1u);
  EXPECT_EQ(s.dropped[0].find('\x1b'), std::string::npos) << s.dropped[0];
}

TEST_F(SettingsImport_, LimitsLeaveOutWhatDoesNotFitAndSaySo) {
  put(home_ + "/.claude/CLAUDE.md", std::string(3000, 'x'));
  for (int i = 0; i < 10; ++i) put(home_ + "/.claude/commands/c" + std::to_string(i) + ".md", "c\n");
  SettingsLimits limits;
  limits.maxFileBytes = 2048;
  limits.maxEntries = 6;
  auto s = import({{".claude/CLAUDE.md", {}}, {".claude/commands", {}}}, limits);
  EXPECT_EQ(find(s, ".claude/CLAUDE.md"), nullptr);
  EXPECT_TRUE(said(s.dropped, "~/.claude/CLAUDE.md: larger than 2.0 KiB"));
  EXPECT_LE(s.entries.size(), 6u);
  EXPECT_TRUE(said(s.dropped, "past the limit of 6 settings entries"));
}

// What the guest's tar unpacks: the same tree, the agent's, no more.
TEST_F(SettingsImport_, ThePackedSettingsUnpackToTheSameTree) {
  put(home_ + "/.claude/CLAUDE.md", "Be brief.\n");
  put(home_ + "/.claude/skills/s/run.sh", "#!/bin/sh\n", 0755);
  auto s = import({{".claude/CLAUDE.md", {}}, {".claude/skills", {}}});
  auto tar = packSettings(s.entries, 1000);
  ASSERT_TRUE(tar) << tar.error().message;
  const std::string tarPath = home_ + "/s.tar", out = home_ + "/out";
  ASSERT_TRUE(writeFileAtomic(tarPath, *tar, 0600));
  auto unpacked = unpackState(tarPath, out, {".claude"}, {});
  ASSERT_TRUE(unpacked) << unpacked.error().message;
  EXPECT_EQ(unpacked->droppedCount, 0u);
  EXPECT_EQ(unpacked->entries, 5u);  // .claude, CLAUDE.md, skills, skills/s, run.sh
  EXPECT_EQ(*readFile(out + "/.claude/CLAUDE.md"), "Be brief.\n");
  struct stat st {};
  ASSERT_EQ(::stat((out + "/.claude/skills/s/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0111, 0111u);
}

TEST(MergeJsonObjects, TheSecondWinsKeyByKeyAndObjectsMerge) {
  auto merged = mergeJsonObjects(R"({"ui": {"theme": "Dracula", "x": 1}, "security": {"auth": "oauth"}})",
                                 R"({"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"x": 2}})");
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_EQ(json::parse(*merged), json::parse(R"({"ui": {"theme": "Dracula", "x": 2},
                                                  "security": {"auth": {"selectedType": "gemini-api-key"}}})"));
  EXPECT_FALSE(mergeJsonObjects("{}", "not json"));
  EXPECT_FALSE(mergeJsonObjects("[]", "{}"));
}

}  // namespace
}  // namespace airlock::state
