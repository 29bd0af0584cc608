// Where agent state lives and what `airlock state ls` reads (issue 16).
#include "state/state_store.h"

#include <gtest/gtest.h>

#include "common/fd.h"
#include "common/paths.h"
#include "support/scratch.h"

namespace airlock::state {
namespace {

TEST(StateStore, OneDirectoryPerAgentAndProject) {
  const std::string a = stateDirFor("/d", "claude-code", "/home/u/src/app");
  EXPECT_TRUE(a.starts_with("/d/state/claude-code/")) << a;
  EXPECT_EQ(a.size(), std::string("/d/state/claude-code/").size() + 16);
  EXPECT_NE(a, stateDirFor("/d", "claude-code", "/home/u/src/other"));
  EXPECT_NE(a, stateDirFor("/d", "codex", "/home/u/src/app"));
  EXPECT_EQ(a, stateDirFor("/d", "claude-code", "/home/u/src/app"));
}

TEST(StateStore, ListsEachSavedStateWithItsProjectAndSize) {
  TempDir dir = test::scratchDir("airlock-state-store-");
  const std::string data = dir.path();
  const std::string app = stateDirFor(data, "claude-code", "/src/app"), lib = stateDirFor(data, "codex", "/src/lib");
  ASSERT_TRUE(makeDirs(app + "/home/.claude"));
  ASSERT_TRUE(writeFileAtomic(app + "/home/.claude/a.jsonl", std::string(1000, 'a'), 0600));
  ASSERT_TRUE(writeFileAtomic(app + "/project", "/src/app\n", 0600));
  ASSERT_TRUE(makeDirs(lib + "/home/.codex"));
  ASSERT_TRUE(writeFileAtomic(lib + "/project", "/src/lib\n", 0600));
  auto all = listStates(data, "");
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].agent, "claude-code");
  EXPECT_EQ((*all)[0].project, "/src/app");
  EXPECT_EQ((*all)[0].bytes, 1000u);
  EXPECT_EQ((*all)[1].agent, "codex");
  auto one = listStates(data, "codex");
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].project, "/src/lib");
  auto found = findState(data, "codex", "/src/lib");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->dir, lib);
  EXPECT_EQ(found->project, "/src/lib");
  EXPECT_FALSE(findState(data, "codex", "/src/app"));
  auto none = listStates(data + "/missing", "");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace airlock::state
