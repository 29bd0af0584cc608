// The agent's commits come back from a change set into the host repository
// under refs/airlock/<session>/, with real git on both sides: the guest is
// a copy of the snapshot in which git runs, the change set is the
// difference. Hostile guests (a forged object, a `.git` path in a tree, a
// ref moved backwards, an alternates file, objects over the limit) leave the
// host repository as it was.

#include "workspace/git_import.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace airlock::workspace {
namespace {

using test::git;
using test::readAll;
using test::sh;
using test::writeFile;

class GitImport : public ::testing::Test {
 protected:
  void SetUp() override {
    git(s_.ws, "init -q");
    writeFile(s_.ws + "/README.md", "hello\n");
    git(s_.ws,
        "add README.md && GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent git -c user.name=U -c user.email=u@e "
        "commit -qm base");
    git(s_.ws, "branch dev");
    hostBefore_ = hostState();
  }

  /// The guest: a copy of the snapshot that git works in.
  std::string guest() {
    if (guest_.empty()) {
      s_.snapshot();
      guest_ = s_.dir.path() + "/guest";
      sh("cp -a '" + s_.session + "/snapshot' '" + guest_ + "'");
    }
    return guest_;
  }

  /// The change set from the snapshot to the guest, imported into `gitDir`
  /// (default: the workspace's .git).
  workspace::GitImport import(GitImportMode mode = GitImportMode::kRefsOnly, GitImportLimits limits = {},
                              std::string gitDir = "") {
    s_.loadDirs(guest());
    std::string scratch = s_.dir.path() + "/scratch" + std::to_string(++imports_);
    std::filesystem::create_directories(scratch);
    if (gitDir.empty()) gitDir = s_.ws + "/.git";
    auto r = importAgentCommits(*s_.changes, gitDir, s_.session + "/snapshot/.git", "refs/airlock/s1/", mode,
                                scratch, limits);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : workspace::GitImport{};
  }

  /// Refs and object count of the host repository, and fsck's verdict.
  std::string hostState() {
    return git(s_.ws, "for-each-ref") + "\n" + git(s_.ws, "count-objects -v") + "\n" +
           git(s_.ws, "fsck --strict --no-dangling && echo fsck-clean");
  }

  void commitInGuest(const std::string& file, const std::string& content, const std::string& message) {
    writeFile(guest() + "/" + file, content);
    git(guest(), "add -A && git -c user.name=Agent -c user.email=agent@example.com commit -qm '" + message + "'");
  }

  test::Scenario s_;
  std::string guest_;
  std::string hostBefore_;
  int imports_ = 0;
};

TEST_F(GitImport, CommitsOnTheCheckedOutBranchComeBackUnderRefsAirlock) {
  const std::string base = git(s_.ws, "rev-parse --short=7 main");
  commitInGuest("login.c", "int login;\n", "Add login");
  commitInGuest("login.c", "int login(void);\n", "Fix login");
  auto out = import();
  ASSERT_TRUE(out.refused.empty()) << out.refused;
  ASSERT_EQ(out.refs.size(), 1u);
  const ImportedRef& r = out.refs[0];
  EXPECT_EQ(r.refused, "");
  EXPECT_EQ(r.guestRef, "refs/heads/main");
  EXPECT_EQ(r.hostRef, "refs/airlock/s1/heads/main");
  EXPECT_EQ(r.newCommits, 2u);
  EXPECT_EQ(r.base, "main@" + base);
  ASSERT_EQ(r.log.size(), 2u);
  EXPECT_NE(r.log[0].find("Fix login"), std::string::npos);
  EXPECT_NE(r.log[1].find("Add login"), std::string::npos);
  EXPECT_EQ(git(s_.ws, "rev-parse refs/airlock/s1/heads/main"), git(guest(), "rev-parse main"));
  EXPECT_EQ(git(s_.ws, "show refs/airlock/s1/heads/main:login.c"), "int login(void);");
  EXPECT_EQ(git(s_.ws, "rev-parse --short=7 main"), base) << "refs-only moved the branch";
  EXPECT_NE(git(s_.ws, "fsck --strict && echo fsck-clean").find("fsck-clean"), std::string::npos);
  EXPECT_EQ(readAll(s_.ws + "/README.md"), "hello\n") << "the working tree is the review's";
  // A later review of the same session (its pending changes) says the same.
  auto again = import();
  ASSERT_EQ(again.refs.size(), 1u);
  EXPECT_EQ(again.refs[0].newCommits, 2u);
  EXPECT_EQ(again.refs[0].hostRef, "refs/airlock/s1/heads/main");
}

TEST_F(GitImport, ANewBranchAndAnAnnotatedTagAfterAGcComeBackFromPacks) {
  git(guest(), "checkout -qb fix-login");
  commitInGuest("a.txt", "a\n", "On a branch");
  git(guest(), "tag -a v1 -m 'release one'");
  git(guest(), "gc -q --prune=now");
  ASSERT_TRUE(std::filesystem::exists(guest() + "/.git/packed-refs"));
  auto out = import();
  ASSERT_TRUE(out.refused.empty()) << out.refused;
  ASSERT_EQ(out.refs.size(), 2u);
  EXPECT_EQ(out.refs[0].guestRef, "refs/heads/fix-login");
  EXPECT_EQ(out.refs[0].refused, "");
  EXPECT_EQ(out.refs[1].guestRef, "refs/tags/v1");
  EXPECT_EQ(out.refs[1].refused, "");
  EXPECT_EQ(git(s_.ws, "cat-file -t refs/airlock/s1/tags/v1"), "tag");
  EXPECT_EQ(git(s_.ws, "show refs/airlock/s1/heads/fix-login:a.txt"), "a");
  EXPECT_EQ(git(s_.ws, "branch --list fix-login"), "") << "refs-only created a branch";
  EXPECT_NE(git(s_.ws, "fsck --strict && echo fsck-clean").find("fsck-clean"), std::string::npos);
}

TEST_F(GitImport, BranchesModeCreatesAndFastForwardsButLeavesTheCheckedOutBranch) {
  git(guest(), "checkout -q dev");
  commitInGuest("d.txt", "d\n", "On dev");
  git(guest(), "checkout -qb feature");
  commitInGuest("f.txt", "f\n", "On feature");
  git(guest(), "checkout -q main");
  commitInGuest("m.txt", "m\n", "On main");
  const std::string mainBefore = git(s_.ws, "rev-parse main");
  auto out = import(GitImportMode::kBranches);
  ASSERT_EQ(out.refs.size(), 3u);
  EXPECT_EQ(out.refs[0].branch, "fast-forwarded branch dev");
  EXPECT_EQ(out.refs[1].branch, "created branch feature");
  EXPECT_NE(out.refs[2].branch.find("main not moved: it is checked out"), std::string::npos) << out.refs[2].branch;
  EXPECT_EQ(git(s_.ws, "rev-parse dev"), git(guest(), "rev-parse dev"));
  EXPECT_EQ(git(s_.ws, "rev-parse feature"), git(guest(), "rev-parse feature"));
  EXPECT_EQ(git(s_.ws, "rev-parse main"), mainBefore);
}

TEST_F(GitImport, BranchesModeNeverMovesABranchThatIsNotAFastForward) {
  git(guest(), "checkout -q dev");
  commitInGuest("d.txt", "guest\n", "Guest on dev");
  git(s_.ws, "checkout -q dev");
  writeFile(s_.ws + "/h.txt", "host\n");
  git(s_.ws, "add h.txt && git commit -qm 'Host on dev' && git checkout -q main");
  const std::string devBefore = git(s_.ws, "rev-parse dev");
  auto out = import(GitImportMode::kBranches);
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_EQ(out.refs[0].refused, "");
  EXPECT_EQ(out.refs[0].branch, "dev not moved: not a fast-forward of yours");
  EXPECT_EQ(git(s_.ws, "rev-parse dev"), devBefore);
  EXPECT_EQ(git(s_.ws, "rev-parse refs/airlock/s1/heads/dev"), git(guest(), "rev-parse dev"));
}

TEST_F(GitImport, AGcInTheGuestDoesNotMakeTheHostsNewerBranchesNews) {
  git(guest(), "gc -q");  // packed-refs now lists main and dev, as they were
  writeFile(s_.ws + "/h.txt", "host\n");
  git(s_.ws, "add h.txt && git commit -qm 'Host moves on'");
  EXPECT_TRUE(import().refs.empty());
}

TEST_F(GitImport, AStalePackedValueUnderALooseRefIsNotNews) {
  git(s_.ws, "pack-refs --all");  // packed-refs: main and dev at base
  writeFile(s_.ws + "/h.txt", "host\n");
  git(s_.ws, "add h.txt && git commit -qm 'Host commit'");  // loose main, newer
  hostBefore_ = hostState();
  git(guest(), "branch -q -D dev");  // rewrites packed-refs, main's stale entry kept
  EXPECT_TRUE(import().refs.empty());
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, BranchesModeNeverCreatesTheBranchAnUnbornHeadNames) {
  git(s_.ws, "checkout -q --orphan fresh");
  git(guest(), "checkout -q --orphan fresh");
  commitInGuest("f.txt", "f\n", "First on fresh");
  auto out = import(GitImportMode::kBranches);
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].branch.find("fresh not created: your HEAD names it"), std::string::npos) << out.refs[0].branch;
  EXPECT_EQ(git(s_.ws, "branch --list fresh"), "");
}

// A linked worktree's session imports through the worktree's own git
// directory: its HEAD is the one that counts (the main checkout's HEAD says
// nothing about it), its objects and refs land in the common directory.
TEST_F(GitImport, AWorktreesUnbornHeadIsItsOwnAndItsRefsLandInTheCommonDirectory) {
  const std::string wt = s_.dir.path() + "/wt";
  git(s_.ws, "worktree add -q --detach '" + wt + "'");
  git(wt, "checkout -q --orphan fresh");
  git(guest(), "checkout -q --orphan fresh");
  commitInGuest("f.txt", "f\n", "First on fresh");
  auto out = import(GitImportMode::kBranches, {}, s_.ws + "/.git/worktrees/wt");
  ASSERT_TRUE(out.refused.empty()) << out.refused;
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].branch.find("fresh not created: your HEAD names it"), std::string::npos) << out.refs[0].branch;
  EXPECT_EQ(git(s_.ws, "branch --list fresh"), "");
  EXPECT_EQ(git(s_.ws, "log -1 --format=%s refs/airlock/s1/heads/fresh"), "First on fresh");
  EXPECT_NE(git(s_.ws, "fsck --strict && echo fsck-clean").find("fsck-clean"), std::string::npos);
}

TEST_F(GitImport, ADetachedHeadComesBackAsHead) {
  git(guest(), "checkout -q --detach");
  commitInGuest("x.txt", "x\n", "Detached work");
  auto out = import();
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_EQ(out.refs[0].guestRef, "HEAD");
  EXPECT_EQ(out.refs[0].hostRef, "refs/airlock/s1/HEAD");
  EXPECT_EQ(git(s_.ws, "rev-parse refs/airlock/s1/HEAD"), git(guest(), "rev-parse HEAD"));
}

TEST_F(GitImport, NothingNewImportsNothingAndModeNoneNeverLooks) {
  git(guest(), "status -s");
  EXPECT_TRUE(import().refs.empty());
  commitInGuest("a.txt", "a\n", "Work");
  EXPECT_TRUE(import(GitImportMode::kNone).refs.empty());
  EXPECT_EQ(hostState(), hostBefore_);
}

// --- hostile guests: the host repository stays as it was ---

TEST_F(GitImport, ARefMovedBackwardsIsRefused) {
  writeFile(s_.ws + "/second.txt", "2\n");
  git(s_.ws, "add second.txt && git commit -qm second");
  hostBefore_ = hostState();
  git(guest(), "reset -q --hard HEAD~1");
  auto out = import();
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].refused.find("moved backwards"), std::string::npos) << out.refs[0].refused;
  EXPECT_EQ(out.refs[0].hostRef, "");
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, ACommitWhoseTreeHoldsGitMetadataIsRefused) {
  for (std::string name : {".git", ".GIT", ".git. ", "git~1", ".g\xE2\x80\x8Cit"}) {
    SCOPED_TRACE(name);
    // A tree "NAME/hooks/post-checkout" made with plumbing (porcelain refuses it).
    std::string hook = git(guest(), "hash-object -w --stdin <<< '#!/bin/sh'");
    std::string hooks = git(guest(), "mktree <<< $'100755 blob " + hook + "\\tpost-checkout'");
    std::string dotgit = git(guest(), "mktree <<< $'040000 tree " + hooks + "\\thooks'");
    std::string readme = git(guest(), "rev-parse HEAD:README.md");
    std::string top = git(
        guest(), "mktree <<< $'100644 blob " + readme + "\\tREADME.md\\n040000 tree " + dotgit + "\\t" + name + "'");
    std::string commit = git(guest(), "commit-tree " + top + " -p HEAD -m evil");
    git(guest(), "update-ref refs/heads/evil " + commit);
    auto out = import();
    ASSERT_EQ(out.refs.size(), 1u);
    EXPECT_NE(out.refs[0].refused.find("git metadata in a commit's tree"), std::string::npos) << out.refs[0].refused;
    EXPECT_EQ(hostState(), hostBefore_);
  }
}

TEST_F(GitImport, AForgedLooseObjectIsRefused) {
  commitInGuest("a.txt", "a\n", "Work");
  const std::string commit = git(guest(), "rev-parse HEAD");
  const std::string blob = git(guest(), "rev-parse HEAD:a.txt");
  // The commit's file holds the blob's (valid, compressed) object instead.
  const std::string commitFile = guest() + "/.git/objects/" + commit.substr(0, 2) + "/" + commit.substr(2);
  const std::string blobFile = guest() + "/.git/objects/" + blob.substr(0, 2) + "/" + blob.substr(2);
  std::filesystem::remove(commitFile);
  std::filesystem::copy_file(blobFile, commitFile);
  auto out = import();
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].refused, "");
  EXPECT_EQ(out.refs[0].hostRef, "");
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, AForgedBlobLeavesNoObjectOfItsCommitBehind) {
  commitInGuest("a.txt", "first\n", "First");
  commitInGuest("b.txt", "second\n", "Second");
  const std::string blob = git(guest(), "rev-parse HEAD:b.txt");
  const std::string other = git(guest(), "rev-parse HEAD:a.txt");
  // b.txt's object file holds a.txt's object: the trees and commits are sound.
  const std::string blobFile = guest() + "/.git/objects/" + blob.substr(0, 2) + "/" + blob.substr(2);
  std::filesystem::remove(blobFile);
  std::filesystem::copy_file(guest() + "/.git/objects/" + other.substr(0, 2) + "/" + other.substr(2), blobFile);
  auto out = import();
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].refused.find("forged"), std::string::npos) << out.refs[0].refused;
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, TheGuestsAlternatesFileIsNotFollowed) {
  // Objects in a directory the guest names in objects/info/alternates (a
  // host path it could guess) are not read: the commit is missing.
  const std::string elsewhere = s_.dir.path() + "/elsewhere.git";
  git(s_.dir.path(), "clone -q --bare '" + guest() + "' elsewhere.git");
  writeFile(s_.dir.path() + "/side/s.txt", "s\n");
  std::string blob = git(elsewhere, "hash-object -w '" + s_.dir.path() + "/side/s.txt'");
  std::string tree = git(elsewhere, "mktree <<< $'100644 blob " + blob + "\\ts.txt'");
  std::string commit = git(elsewhere, "commit-tree " + tree + " -m side");
  writeFile(guest() + "/.git/objects/info/alternates", elsewhere + "/objects\n");
  git(guest(), "update-ref refs/heads/side " + commit);
  auto out = import();
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].refused.find("missing"), std::string::npos) << out.refs[0].refused;
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, ObjectFilesOverTheLimitRefuseTheWholeImport) {
  sh("head -c 200000 /dev/urandom > '" + guest() + "/big.bin'");
  git(guest(), "add big.bin && git commit -qm Big");
  GitImportLimits limits;
  limits.maxTotalBytes = 64 * 1024;
  auto out = import(GitImportMode::kRefsOnly, limits);
  EXPECT_NE(out.refused.find("over the import's limit"), std::string::npos) << out.refused;
  EXPECT_TRUE(out.refs.empty());
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, AnObjectThatInflatesPastTheLimitRefusesTheImportBeforeItIsRead) {
  // 8 MiB of zeros: a few KiB on disk, 8 MiB once read.
  sh("head -c 8388608 /dev/zero > '" + guest() + "/zeros.bin'");
  git(guest(), "add zeros.bin && git commit -qm Zeros");
  GitImportLimits limits;
  limits.maxObjectBytes = 1 << 20;
  auto out = import(GitImportMode::kRefsOnly, limits);
  EXPECT_NE(out.refused.find("is 8 MiB, over the import's limit of 1 MiB"), std::string::npos) << out.refused;
  EXPECT_TRUE(out.refs.empty());
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, APackWhoseDeltasExpandPastTheMemoryLimitIsRefused) {
  // 4 KiB of pack: a 4 MiB blob and a delta that copies it 64 times (256 MiB).
  sh("python3 - '" + guest() +
     "/.git/objects/pack/pack-bomb.pack' <<'EOF'\n"
     "import hashlib, struct, sys, zlib\n"
     "def hdr(t, n):\n"
     "    b = []; c = (t << 4) | (n & 15); n >>= 4\n"
     "    while n: b.append(c | 0x80); c = n & 0x7f; n >>= 7\n"
     "    b.append(c); return bytes(b)\n"
     "def varint(n):\n"
     "    out = []\n"
     "    while True:\n"
     "        c = n & 0x7f; n >>= 7\n"
     "        if not n: out.append(c); return bytes(out)\n"
     "        out.append(c | 0x80)\n"
     "def ofs(n):\n"
     "    b = [n & 0x7f]; n >>= 7\n"
     "    while n: n -= 1; b.insert(0, 0x80 | (n & 0x7f)); n >>= 7\n"
     "    return bytes(b)\n"
     "size, copies = 4 << 20, 64\n"
     "base = hdr(3, size) + zlib.compress(bytes(size), 9)\n"
     "copy = bytes([0x80 | 0x40]) + bytes([size >> 16 & 0xff])\n"
     "delta = varint(size) + varint(size * copies) + copy * copies\n"
     "bomb = hdr(6, len(delta)) + ofs(len(base)) + zlib.compress(delta, 9)\n"
     "body = b'PACK' + struct.pack('>II', 2, 2) + base + bomb\n"
     "open(sys.argv[1], 'wb').write(body + hashlib.sha1(body).digest())\n"
     "EOF");
  commitInGuest("a.txt", "a\n", "Work");
  GitImportLimits limits;
  limits.indexMemoryBytes = 128 << 20;
  auto out = import(GitImportMode::kRefsOnly, limits);
  // The indexer's child runs out of its memory: libgit2 says so, or the child dies.
  EXPECT_NE(out.refused.find("pack-bomb.pack is not a"), std::string::npos) << out.refused;
  EXPECT_EQ(hostState(), hostBefore_);
  // The same pack is a valid one: with the default limits it indexes (its
  // blob is not the commit's, so nothing of it is imported).
  auto control = import();
  EXPECT_EQ(control.refused, "");
  ASSERT_EQ(control.refs.size(), 1u);
  EXPECT_EQ(control.refs[0].refused, "");
}

TEST_F(GitImport, EveryTagOfAChainComesAlong) {
  commitInGuest("a.txt", "a\n", "Work");
  git(guest(),
      "tag -a inner -m inner && git -c advice.nestedTag=false tag -a outer -m outer inner && git tag -d inner");
  auto out = import();
  ASSERT_EQ(out.refs.size(), 2u);  // main and the outer tag
  EXPECT_EQ(out.refs[1].guestRef, "refs/tags/outer");
  EXPECT_EQ(out.refs[1].refused, "");
  EXPECT_EQ(git(s_.ws, "log -1 --format=%s refs/airlock/s1/tags/outer"), "Work");
  EXPECT_NE(git(s_.ws, "fsck --strict && echo fsck-clean").find("fsck-clean"), std::string::npos);
}

TEST_F(GitImport, BranchesModeLeavesABranchCheckedOutInALinkedWorktree) {
  git(guest(), "checkout -q dev");
  git(s_.ws, "worktree add -q '" + s_.dir.path() + "/wt' dev");
  commitInGuest("d.txt", "d\n", "On dev");
  const std::string devBefore = git(s_.ws, "rev-parse dev");
  auto out = import(GitImportMode::kBranches);
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].branch.find("dev not moved: it is checked out"), std::string::npos) << out.refs[0].branch;
  EXPECT_EQ(git(s_.ws, "rev-parse dev"), devBefore);
}

TEST_F(GitImport, AGitmodulesSymlinkInATreeIsRefused) {
  std::string link = git(guest(), "hash-object -w --stdin <<< '/etc/passwd'");
  std::string readme = git(guest(), "rev-parse HEAD:README.md");
  std::string top =
      git(guest(), "mktree <<< $'100644 blob " + readme + "\tREADME.md\n120000 blob " + link + "\t.GITMODULES'");
  git(guest(), "update-ref refs/heads/links $(git commit-tree " + top + " -p HEAD -m links)");
  auto out = import();
  ASSERT_EQ(out.refs.size(), 1u);
  EXPECT_NE(out.refs[0].refused.find(".gitmodules that is a symlink"), std::string::npos) << out.refs[0].refused;
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST_F(GitImport, AGuestChosenPackNameIsEscapedInTheMessage) {
  commitInGuest("a.txt", "a\n", "Work");
  writeFile(guest() + "/.git/objects/pack/\x1b]0;PWNED\x07\x1b[2J.pack", "garbage");
  auto out = import();
  EXPECT_NE(out.refused.find("is not a valid pack"), std::string::npos) << out.refused;
  EXPECT_EQ(out.refused.find('\x1b'), std::string::npos) << out.refused;
  EXPECT_EQ(out.refused.find('\x07'), std::string::npos) << out.refused;
}

TEST_F(GitImport, ABrokenPackIsRefused) {
  commitInGuest("a.txt", "a\n", "Work");
  git(guest(), "gc -q --prune=now");
  std::string pack = sh("ls '" + guest() + "'/.git/objects/pack/*.pack");
  sh("printf 'garbage' | dd of='" + pack + "' bs=1 seek=40 conv=notrunc 2>/dev/null");
  auto out = import();
  EXPECT_NE(out.refused.find("not a valid pack"), std::string::npos) << out.refused;
  EXPECT_EQ(hostState(), hostBefore_);
}

TEST(GitImportNames, DotGitAndItsAliasesAreRecognised) {
  for (std::string bad :
       {".git", ".Git", ".GIT", ".git.", ".git ", ".git . .", "git~1", "GIT~1", "", ".", "..", ".g\xE2\x80\x8Cit",
        "\xEF\xBB\xBF.git", ".git::$INDEX_ALLOCATION", "GIT~1:x", ".git\\hooks", "x\\..\\y", "a/b", ".git/hooks"})
    EXPECT_TRUE(isDotGitAlias(bad)) << bad;
  for (std::string name : {".gitmodules", ".GITMODULES", ".gitmodules. ", "gitmod~1", ".gitmodules:$DATA"})
    EXPECT_TRUE(isGitmodulesName(name)) << name;
  EXPECT_FALSE(isGitmodulesName(".gitmodules2"));
  for (std::string ok : {".github", ".gitignore", "git", "x.git", ".git~1", "git~2", ".gi"})
    EXPECT_FALSE(isDotGitAlias(ok)) << ok;
}

TEST(GitImportNames, TheModesParseAndOthersAreUsageErrors) {
  EXPECT_EQ(parseGitImportMode("none").value(), GitImportMode::kNone);
  EXPECT_EQ(parseGitImportMode("refs-only").value(), GitImportMode::kRefsOnly);
  EXPECT_EQ(parseGitImportMode("branches").value(), GitImportMode::kBranches);
  auto bad = parseGitImportMode("all");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, 64);
}

}  // namespace
}  // namespace airlock::workspace
