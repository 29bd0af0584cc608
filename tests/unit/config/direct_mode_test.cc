// Direct mode guards: only from flags or the user config, confirmed with
// --yes or the user config's acknowledgement, never with --review/--exclude.

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "config/loader.h"
#include "config/merge.h"

namespace airlock::config {
namespace {

ConfigSources sources(const char* user, const char* repo, const char* flags) {
  ConfigSources s;
  s.userPath = "/home/u/.config/airlock/config.yaml";
  s.repoPath = "/src/app/.airlock.yaml";
  if (*user) s.user = *parseConfig(user, "user.yaml");
  if (*repo) s.repo = *parseConfig(repo, "repo.yaml");
  s.flags = *parseConfig(flags, "flags");
  return s;
}

Result<> check(const ConfigSources& s, bool yes) {
  agents::AgentSpec agent;
  return checkDirectMode(resolve(agent, s), s, yes);
}

TEST(DirectMode, FlagNeedsYes) {
  auto s = sources("", "", "workspace_mode: direct");
  auto r = check(s, false);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage);
  EXPECT_NE(r.error().message.find("--yes"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("direct_mode_acknowledged"), std::string::npos);
  EXPECT_TRUE(check(s, true));
}

TEST(DirectMode, UserConfigNeedsYesOrAcknowledgement) {
  EXPECT_FALSE(check(sources("workspace_mode: direct", "", ""), false));
  EXPECT_TRUE(check(sources("workspace_mode: direct", "", ""), true));
  EXPECT_TRUE(check(sources("workspace_mode: direct\ndirect_mode_acknowledged: true", "", ""), false));
  EXPECT_TRUE(check(sources("direct_mode_acknowledged: true", "", "workspace_mode: direct"), false));
}

TEST(DirectMode, IncompatibleWithReviewFlag) {
  auto r = check(sources("", "", "workspace_mode: direct\nreview: auto"), true);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage);
  EXPECT_NE(r.error().message.find("--review"), std::string::npos) << r.error().message;
}

TEST(DirectMode, IncompatibleWithExcludeFlag) {
  auto r = check(sources("workspace_mode: direct", "", "exclude: [\"*.log\"]"), true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--exclude"), std::string::npos) << r.error().message;
}

TEST(DirectMode, RefusedFromRepoConfig) {
  auto s = sources("", "workspace_mode: direct\ndirect_mode_acknowledged: true", "");
  agents::AgentSpec agent;
  Resolved r = resolve(agent, s);
  EXPECT_EQ(r.settings.workspaceMode.value, WorkspaceMode::kSnapshot);
  ASSERT_EQ(r.ignored.size(), 2u);
  EXPECT_NE(r.ignored[0].reason.find("cannot enable direct mode"), std::string::npos);
  EXPECT_TRUE(checkDirectMode(r, s, false));
}

TEST(DirectMode, RepoAcknowledgementDoesNotCount) {
  auto r = check(sources("workspace_mode: direct", "direct_mode_acknowledged: true", ""), false);
  EXPECT_FALSE(r);
}

TEST(DirectMode, RepoForcesSnapshotOverUserDirectButFlagsWin) {
  agents::AgentSpec agent;
  auto s = sources("workspace_mode: direct", "workspace_mode: snapshot", "");
  EXPECT_EQ(resolve(agent, s).settings.workspaceMode.value, WorkspaceMode::kSnapshot);
  s = sources("", "workspace_mode: snapshot", "workspace_mode: direct");
  EXPECT_EQ(resolve(agent, s).settings.workspaceMode.value, WorkspaceMode::kDirect);
}

TEST(DirectMode, SnapshotModeHasNoGuards) {
  EXPECT_TRUE(check(sources("", "", "review: auto\nexclude: [x]"), false));
}

}  // namespace
}  // namespace airlock::config
