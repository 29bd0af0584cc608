// `airlock info`'s git lines: what the snapshot drops from the repository's
// config, by key name only (never a value, a subsection or a token-looking
// word), and what becomes of the agent's commits.

#include "cli/git_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/scratch.h"

namespace airlock::cli {
namespace {

TEST(GitInfo, NamesTheDroppedKeysButNoValueSubsectionOrToken) {
  auto dir = test::scratchDir("airlock-git-info-");
  std::filesystem::create_directories(dir.path() + "/.git");
  std::ofstream(dir.path() + "/.git/config") << "[core]\n\tbare = false\n\tfsmonitor = .git/hooks/x\n"
                                                "[remote \"origin\"]\n\turl = https://user:s3cr3t@example.com/r.git\n"
                                                "[credential \"https://ghp_subsectiontoken1234@example.com\"]\n"
                                                "\thelper = store\n"
                                                "[alias]\n\tst = !touch /tmp/x\n\tghp_barewordtoken123456\n";
  auto g = gitEnvelope(dir.path(), "", false);
  EXPECT_EQ(g.repository, GitEnvelope::Repository::kDirectory);
  EXPECT_EQ(g.mode, "refs-only");
  EXPECT_EQ(g.dropped, (std::vector<std::string>{"(a key that is not git's syntax)", "alias.st", "core.fsmonitor",
                                                 "credential.*.helper"}));
  EXPECT_TRUE(g.urlCredentials);
  const std::string text = gitEnvelopeText(g) + gitEnvelopeJson(g).dump();
  for (const char* secret : {"s3cr3t", "ghp_", "touch", "hooks/x"})
    EXPECT_EQ(text.find(secret), std::string::npos) << secret;
  EXPECT_NE(text.find("refs/airlock/NAME/... (--git=refs-only)"), std::string::npos) << text;
  EXPECT_NE(text.find("credentials removed from the URLs"), std::string::npos) << text;
}

TEST(GitInfo, AWorktreeNoRepositoryAndDirectModeSayWhatTheVmGets) {
  auto dir = test::scratchDir("airlock-git-info-");
  EXPECT_EQ(gitEnvelope(dir.path(), "", false).repository, GitEnvelope::Repository::kNone);
  EXPECT_NE(gitEnvelopeText(gitEnvelope(dir.path(), "", false)).find("no repository"), std::string::npos);
  std::ofstream(dir.path() + "/.git") << "gitdir: /elsewhere/.git/worktrees/w\n";
  auto dangling = gitEnvelope(dir.path(), "branches", false);
  EXPECT_EQ(dangling.repository, GitEnvelope::Repository::kGitFile);
  EXPECT_EQ(gitEnvelopeJson(dangling)["commits"], "not imported");
  EXPECT_NE(gitEnvelopeText(dangling).find("a run stops here"), std::string::npos) << gitEnvelopeText(dangling);
  EXPECT_NE(gitEnvelopeText(dangling).find("git worktree repair"), std::string::npos);
  EXPECT_EQ(gitEnvelope(dir.path(), "", true).repository, GitEnvelope::Repository::kDirect);
  EXPECT_NE(gitEnvelopeText(gitEnvelope(dir.path(), "", true)).find("live repository"), std::string::npos);
}

// A linked worktree: its repository's config is the one read and sanitized,
// and its commits come back.
TEST(GitInfo, ALinkedWorktreeShowsItsRepositorysConfig) {
  auto dir = test::scratchDir("airlock-git-info-");
  const std::string common = dir.path() + "/repo/.git";
  std::filesystem::create_directories(common + "/objects");
  std::filesystem::create_directories(common + "/worktrees/wt");
  std::ofstream(common + "/config") << "[core]\n\tbare = false\n\tsshCommand = ssh -i key\n";
  std::ofstream(common + "/worktrees/wt/HEAD") << "ref: refs/heads/feature\n";
  std::ofstream(common + "/worktrees/wt/commondir") << "../..\n";
  std::filesystem::create_directories(dir.path() + "/wt");
  std::ofstream(dir.path() + "/wt/.git") << "gitdir: " << common << "/worktrees/wt\n";
  auto g = gitEnvelope(dir.path() + "/wt", "", false);
  EXPECT_EQ(g.repository, GitEnvelope::Repository::kWorktree);
  EXPECT_EQ(g.commonDir, std::filesystem::canonical(common).string());
  EXPECT_EQ(g.dropped, std::vector<std::string>{"core.sshcommand"});
  EXPECT_NE(gitEnvelopeText(g).find("a linked worktree"), std::string::npos) << gitEnvelopeText(g);
  EXPECT_EQ(gitEnvelopeJson(g)["repository"], "worktree");
  EXPECT_EQ(gitEnvelopeJson(g)["commits"], "refs-only");
}

}  // namespace
}  // namespace airlock::cli
