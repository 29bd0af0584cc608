// A workspace that is a linked git worktree: its repository lies outside it,
// so the snapshot gets a standalone .git directory, built with real git on
// the host side and checked with real git in the copy: the worktree's branch,
// HEAD and index, the shared objects and refs, the config without its
// credentials and commands, no hooks, no other worktree, no host path.

#include "workspace/linked_git_dir.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "test_util.h"

namespace airlock::workspace {
namespace {

namespace fs = std::filesystem;
using test::git;
using test::readAll;
using test::sh;
using test::writeFile;

class LinkedGitDir_ : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::canonical(dir_.path()).string();
    repo_ = root_ + "/repo";
    wt_ = root_ + "/wt";
    fs::create_directories(repo_);
    git(repo_, "init -q");
    writeFile(repo_ + "/README.md", "hello\n");
    git(repo_, "add README.md && git -c user.name=U -c user.email=u@e commit -qm base");
    git(repo_, "worktree add -q -b feature ../wt");
    git(repo_, "worktree add -q -b other ../other");
    writeFile(root_ + "/other/OTHER-CHECKOUT.txt", "not for this session\n");
    writeFile(wt_ + "/feature.txt", "feature work\n");
    git(wt_, "add feature.txt");  // staged, not committed: the worktree's own index
    git(repo_, "config credential.helper store");
    git(repo_, "config remote.origin.url https://x-access-token:tok-123@github.com/o/r.git");
    git(repo_, "config core.fsmonitor 'touch /tmp/FSMONITOR-RAN'");
    writeFile(repo_ + "/.git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/HOOK-RAN\n", 0755);
  }

  /// The worktree's snapshot with its repository added, as a session and
  /// `airlock snapshot` take it.
  SnapshotResult snapshot(const std::vector<std::string>& excludes = {}) {
    IgnoreRules rules;
    for (const auto& e : excludes) rules.addPattern(e);
    fs::create_directories(root_ + "/session");
    std::optional<LinkedGitDir> linked;
    auto snap = snapshotWorkspace(wt_, snap_(), rules, {}, &linked);
    EXPECT_TRUE(snap) << snap.error().message;
    EXPECT_TRUE(linked);
    if (!snap) return {};
    return *snap;
  }
  std::string snap_() const { return root_ + "/session/snapshot"; }

  TempDir dir_ = test::scratch();
  std::string root_, repo_, wt_;
};

TEST_F(LinkedGitDir_, FindsTheWorktreesOwnAndCommonDirectories) {
  auto linked = findLinkedGitDir(wt_);
  ASSERT_TRUE(linked) << linked.error().message;
  ASSERT_TRUE(*linked);
  EXPECT_EQ((*linked)->gitDir, repo_ + "/.git/worktrees/wt");
  EXPECT_EQ((*linked)->commonDir, repo_ + "/.git");
  auto main = findLinkedGitDir(repo_);
  ASSERT_TRUE(main);
  EXPECT_FALSE(*main) << "a .git directory is the repository itself";
  auto none = findLinkedGitDir(root_);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST_F(LinkedGitDir_, ADanglingGitdirIsAnErrorNamingTheRepair) {
  fs::rename(repo_ + "/.git/worktrees/wt", root_ + "/moved");
  auto linked = findLinkedGitDir(wt_);
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().code, exit_code::kHostNotReady);
  EXPECT_NE(linked.error().message.find("git worktree repair"), std::string::npos) << linked.error().message;
}

TEST_F(LinkedGitDir_, ThePointerFileIsLeftAloneWhenItNamesADirectoryInsideTheWorkspace) {
  fs::rename(repo_ + "/.git", wt_ + "/.repo");
  writeFile(wt_ + "/.git", "gitdir: .repo/worktrees/wt\n");
  auto linked = findLinkedGitDir(wt_);
  ASSERT_TRUE(linked) << linked.error().message;
  EXPECT_FALSE(*linked) << "the snapshot copies it with the workspace";
}

// In the copy git works as in the worktree: same branch and commit, the
// staged file staged, the shared history there.
TEST_F(LinkedGitDir_, TheSnapshotHoldsAWorkingRepositoryOnTheWorktreesBranch) {
  auto snap = snapshot();
  ASSERT_TRUE(fs::is_directory(snap_() + "/.git"));
  EXPECT_EQ(git(snap_(), "rev-parse --abbrev-ref HEAD"), "feature");
  EXPECT_EQ(git(snap_(), "rev-parse HEAD"), git(wt_, "rev-parse HEAD"));
  EXPECT_EQ(git(snap_(), "status --porcelain"), "A  feature.txt");
  EXPECT_EQ(git(snap_(), "log --format=%s"), "base");
  EXPECT_EQ(git(snap_(), "fsck --strict --no-dangling && echo clean"), "clean");
  git(snap_(), "commit -qm 'agent work'");
  EXPECT_EQ(git(snap_(), "log -1 --format=%s feature"), "agent work");
  EXPECT_EQ(git(wt_, "log -1 --format=%s feature"), "base") << "the host's branch stayed";
  // The manifest describes the copy: .git a directory, HEAD the worktree's.
  const ManifestEntry* top = snap.manifest.find(".git");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->type, EntryType::Dir);
  const ManifestEntry* head = snap.manifest.find(".git/HEAD");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->size, readAll(repo_ + "/.git/worktrees/wt/HEAD").size());
  EXPECT_NE(snap.manifest.find(".git/index"), nullptr);
  EXPECT_NE(snap.manifest.find(".git/config"), nullptr);
}

// Nothing of the other checkouts, no hook, no credential or command from
// the config, no host path in any file of the copy's .git.
TEST_F(LinkedGitDir_, TheCopyHoldsNoHooksCredentialsOtherWorktreesOrHostPaths) {
  auto snap = snapshot();
  EXPECT_FALSE(fs::exists(snap_() + "/.git/worktrees"));
  EXPECT_FALSE(fs::exists(snap_() + "/.git/hooks"));
  EXPECT_FALSE(fs::exists(snap_() + "/OTHER-CHECKOUT.txt"));
  const std::string config = readAll(snap_() + "/.git/config");
  EXPECT_EQ(config.find("credential"), std::string::npos) << config;
  EXPECT_EQ(config.find("tok-123"), std::string::npos) << config;
  EXPECT_EQ(config.find("fsmonitor"), std::string::npos) << config;
  EXPECT_NE(config.find("https://github.com/o/r.git"), std::string::npos) << config;
  EXPECT_EQ(sh("grep -rl -F '" + root_ + "' '" + snap_() + "/.git' || true"), "") << "a host path in the copy";
  for (const auto& k : snap.excluded)
    EXPECT_NE(k.reason, KeptOutReason::Ignored) << k.path << ": the copy's own rules are not the user's ignoring";
  EXPECT_NE(std::find(snap.gitCredentialsStripped.begin(), snap.gitCredentialsStripped.end(), ".git/config"),
            snap.gitCredentialsStripped.end());
  EXPECT_EQ(readAll(repo_ + "/.git/config").find("tok-123") != std::string::npos, true) << "the host's is untouched";
}

// The main checkout's index or merge in progress never stands in for the
// worktree's: a worktree with no index gets none.
TEST_F(LinkedGitDir_, TheMainCheckoutsOwnFilesDoNotLeakIn) {
  writeFile(repo_ + "/.git/MERGE_HEAD", git(repo_, "rev-parse HEAD") + "\n");
  fs::remove(repo_ + "/.git/worktrees/wt/index");
  auto snap = snapshot();
  EXPECT_FALSE(fs::exists(snap_() + "/.git/MERGE_HEAD"));
  EXPECT_EQ(snap.manifest.find(".git/MERGE_HEAD"), nullptr);
  EXPECT_FALSE(fs::exists(snap_() + "/.git/index"));
  EXPECT_EQ(snap.manifest.find(".git/index"), nullptr);
  EXPECT_EQ(readAll(snap_() + "/.git/HEAD"), "ref: refs/heads/feature\n");
}

// `git clone --bare` with the worktrees inside it (the ".bare" layout):
// the copy is no bare repository, and neither the other checkout nor this
// one (again, past its exclusions) comes along with the repository.
TEST_F(LinkedGitDir_, WorktreesInsideABareRepositoryStayOutAndTheCopyIsNotBare) {
  const std::string bare = root_ + "/bare.git";
  git(root_, "clone -q --bare repo bare.git");
  git(bare, "worktree add -q -b inside wt1");
  git(bare, "worktree add -q -b second wt2");
  writeFile(bare + "/wt2/secret-notes.txt", "the other checkout's\n");
  writeFile(bare + "/wt1/private/data.txt", "kept out by the user\n");
  wt_ = bare + "/wt1";
  auto snap = snapshot({"/private/"});
  EXPECT_EQ(sh("cd '" + snap_() + "' && find . -name secret-notes.txt -o -name data.txt -o -name wt1 -o -name wt2"),
            "");
  EXPECT_EQ(git(snap_(), "rev-parse --abbrev-ref HEAD"), "inside");
  EXPECT_EQ(git(snap_(), "status --porcelain && echo works"), "works");
  writeFile(snap_() + "/new.txt", "agent\n");
  git(snap_(), "add new.txt && git commit -qm 'agent work'");
  EXPECT_EQ(git(snap_(), "log -1 --format=%s"), "agent work");
}

TEST_F(LinkedGitDir_, AnExcludedDotGitIsLeftOut) {
  auto snap = snapshot({".git"});
  EXPECT_FALSE(fs::exists(snap_() + "/.git"));
  EXPECT_EQ(snap.manifest.find(".git"), nullptr);
}

// The worktree's own state comes along (a split index, a rebase in
// progress); the main checkout's (its rebase, sparse checkout) does not.
TEST_F(LinkedGitDir_, TheWorktreesOwnStateComesAlongAndTheMainCheckoutsDoesNot) {
  git(wt_, "update-index --split-index");
  writeFile(repo_ + "/.git/worktrees/wt/rebase-merge/head-name", "refs/heads/feature\n");
  writeFile(repo_ + "/.git/rebase-merge/head-name", "refs/heads/main\n");
  writeFile(repo_ + "/.git/info/sparse-checkout", "/keep/\n");
  auto snap = snapshot();
  EXPECT_EQ(git(snap_(), "status --porcelain --untracked-files=no && echo works"), "A  feature.txt\nworks");
  EXPECT_EQ(readAll(snap_() + "/.git/rebase-merge/head-name"), "refs/heads/feature\n");
  EXPECT_FALSE(fs::exists(snap_() + "/.git/info/sparse-checkout"));
  EXPECT_NE(snap.manifest.find(".git/rebase-merge/head-name"), nullptr);
  EXPECT_FALSE(fs::exists(snap_() + "/.git/commondir"));
  EXPECT_FALSE(fs::exists(snap_() + "/.git/gitdir"));
  EXPECT_FALSE(fs::exists(root_ + "/session/snapshot.worktree-git")) << "the second copy is gone";
}

// Only the checkout's state comes from the worktree's own directory: a
// stray config there (never cleaned) or hooks never replace the cleaned
// repository config; a bare repository's config without a final newline
// still ends up not bare.
TEST_F(LinkedGitDir_, AStrayConfigOrHooksInTheWorktreesDirectoryStayOut) {
  writeFile(repo_ + "/.git/worktrees/wt/config", "[credential]\n\thelper = store --file /stray-token\n");
  writeFile(repo_ + "/.git/worktrees/wt/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/HOOK-RAN\n", 0755);
  git(repo_, "config core.bare true");
  std::string config = readAll(repo_ + "/.git/config");
  while (!config.empty() && config.back() == '\n') config.pop_back();
  writeFile(repo_ + "/.git/config", config);  // no final newline
  auto snap = snapshot();
  EXPECT_FALSE(fs::exists(snap_() + "/.git/hooks"));
  EXPECT_EQ(readAll(snap_() + "/.git/config").find("stray-token"), std::string::npos);
  EXPECT_EQ(git(snap_(), "rev-parse --is-bare-repository"), "false");
  EXPECT_EQ(git(snap_(), "status --porcelain && echo works"), "A  feature.txt\nworks");
}

// The review of a worktree session: the agent's commit changes the
// snapshot's .git, which the live workspace has only as a file. Those items
// are git metadata with nothing live to compare: never "changed on the
// host" (a conflict), never dropped as already present (a deletion).
TEST(WorktreeReview, TheAgentsGitMetadataIsNeitherAConflictNorAlreadyPresent) {
  test::Scenario s;
  const std::string repo = s.dir.path() + "/repo";
  fs::create_directories(repo);
  git(repo, "init -q");
  git(repo, "commit -q --allow-empty -m base");
  fs::remove(s.ws);
  git(repo, "worktree add -q -b feature '" + s.ws + "'");
  s.snapshot();
  auto linked = findLinkedGitDir(s.ws);
  ASSERT_TRUE(linked && *linked);
  SnapshotResult snap;
  snap.manifest = s.baseline;
  ASSERT_TRUE(addLinkedGitDir(**linked, s.session + "/snapshot", snap));
  s.baseline = snap.manifest;
  const std::string guest = s.dir.path() + "/guest";
  sh("cp -a '" + s.session + "/snapshot' '" + guest + "'");
  writeFile(guest + "/a.txt", "a\n");
  git(guest, "add a.txt && git commit -qm 'agent work' && git pack-refs --all");
  s.loadDirs(guest);
  auto d = s.diff();
  bool headRef = false, deletion = false;
  for (const auto& item : d.items) {
    if (!item.path.starts_with(".git")) continue;
    EXPECT_FALSE(item.conflict) << item.path << ": " << item.conflictReason;
    headRef |= item.path == ".git/refs/heads/feature";
    deletion |= item.kind == ChangeKind::Deleted;
  }
  EXPECT_TRUE(headRef) << "the moved branch is an item";
  EXPECT_TRUE(deletion) << "pack-refs removed a loose ref: a deletion item";
  EXPECT_EQ(d.alreadyApplied, 0u);
}

// Submodules need nothing of this: their gitdirs lie under the
// superproject's .git/modules, named by relative paths, so the plain
// snapshot is a working repository with working submodules, their hooks
// kept out and their configs stripped too.
TEST(SubmoduleSnapshot, ASubmoduleWorksInTheCopy) {
  TempDir dir = test::scratch();
  const std::string root = fs::canonical(dir.path()).string();
  const std::string lib = root + "/lib", ws = root + "/ws";
  fs::create_directories(lib);
  git(lib, "init -q");
  writeFile(lib + "/lib.c", "int lib;\n");
  git(lib, "add lib.c && git commit -qm 'lib base'");
  fs::create_directories(ws);
  git(ws, "init -q");
  git(ws, "-c protocol.file.allow=always submodule add -q '" + lib + "' vendor/lib");
  git(ws, "commit -qm 'add lib'");
  git(ws + "/vendor/lib", "config credential.helper store");
  writeFile(ws + "/.git/modules/vendor/lib/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/HOOK-RAN\n", 0755);
  ASSERT_EQ(sh("head -c 8 '" + ws + "/vendor/lib/.git'"), "gitdir: ");
  auto linked = findLinkedGitDir(ws);
  ASSERT_TRUE(linked);
  EXPECT_FALSE(*linked) << "the superproject's .git is a directory";
  fs::create_directories(root + "/session");
  IgnoreRules rules;
  auto snap = takeSnapshot(ws, root + "/session/snapshot", rules);
  ASSERT_TRUE(snap) << snap.error().message;
  const std::string copy = root + "/session/snapshot";
  EXPECT_EQ(git(copy, "submodule status").substr(42), "vendor/lib (heads/main)");
  EXPECT_EQ(git(copy + "/vendor/lib", "status --porcelain && echo clean"), "clean");
  writeFile(copy + "/vendor/lib/lib.c", "int lib(void);\n");
  git(copy + "/vendor/lib", "commit -qam 'agent fix'");
  EXPECT_EQ(git(copy + "/vendor/lib", "log -1 --format=%s"), "agent fix");
  EXPECT_EQ(git(lib, "log -1 --format=%s"), "lib base");
  EXPECT_FALSE(fs::exists(copy + "/.git/modules/vendor/lib/hooks"));
  EXPECT_EQ(readAll(copy + "/.git/modules/vendor/lib/config").find("credential"), std::string::npos);
}

}  // namespace
}  // namespace airlock::workspace
