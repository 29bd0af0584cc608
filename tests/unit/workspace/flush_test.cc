#include "workspace/flush.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "test_util.h"

namespace airlock::workspace {
namespace {

using test::makeTar;
using test::readAll;
using test::Scenario;
using test::treeListing;
using test::writeFile;

namespace fs = std::filesystem;

// A workspace and a change set that exercises every kind of step.
void setUpRich(Scenario& s) {
  writeFile(s.ws + "/mod.txt", "old\n");
  writeFile(s.ws + "/del.txt", "bye");
  writeFile(s.ws + "/mode.sh", "x", 0644);
  ::symlink("a", (s.ws + "/lchg").c_str());
  std::filesystem::create_directories(s.ws + "/d2f");
  writeFile(s.ws + "/d2f/inner", "i");
  writeFile(s.ws + "/f2d", "file");
  writeFile(s.ws + "/.env", "SECRET=1");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"mod.txt", 'f', "new\n"},
                               {".wh.del.txt", 'f'},
                               {"mode.sh", 'f', "x", "", 0755},
                               {"lchg", 'l', "", "b", 0777},
                               {".wh.d2f", 'f'},
                               {"d2f", 'f', "now a file"},
                               {"f2d/", 'd', "", "", 0755},
                               {"f2d/child", 'f', "c"},
                               {"deep/new/dir/file.txt", 'f', "deep"},
                               {"suid", 'f', "s", "", 06755},
                               {"emptydir/", 'd', "", "", 0750}})),
            "");
}

constexpr const char* kRichAfter =
    "d2f f now a file 644\n"
    "deep d 755\n"
    "deep/new d 755\n"
    "deep/new/dir d 755\n"
    "deep/new/dir/file.txt f deep 644\n"
    "emptydir d 750\n"
    "f2d d 755\n"
    "f2d/child f c 644\n"
    "lchg l b 777\n"
    "mod.txt f new\n 644\n"
    "mode.sh f x 755\n"
    "suid f s 755\n";

std::string withoutEnv(std::string listing) {
  auto pos = listing.find(".env f SECRET=1 644\n");
  EXPECT_NE(pos, std::string::npos) << "the secret must be untouched";
  if (pos != std::string::npos) listing.erase(pos, std::string_view(".env f SECRET=1 644\n").size());
  return listing;
}

TEST(Flush, AppliesEveryKindAndStripsSpecialBits) {
  Scenario s;
  setUpRich(s);
  auto d = s.diff();
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->conflicts, 0u);
  EXPECT_EQ(withoutEnv(treeListing(s.ws)), kRichAfter);
  for (auto& e : fs::directory_iterator(s.state + "/flush"))
    EXPECT_TRUE(e.path().string().ends_with(".lock")) << "no in-progress pointer is left: " << e.path();
  EXPECT_FALSE(fs::exists(s.session + "/flush"));
  for (auto& e : fs::directory_iterator(s.ws)) EXPECT_EQ(e.path().filename().string().find(".airlock-flush"), std::string::npos);
}

// Issue 12 item 12: the agent chmods a workspace file that is a hard link to
// a file outside the workspace. The flush must not chmod the shared inode:
// the outside file keeps 0600 (and its content), the workspace name gets a
// new inode with the new mode.
TEST(Flush, ChmodOfFileHardLinkedOutsideLeavesTheOutsideFileAlone) {
  Scenario s;
  std::string outside = s.dir.path() + "/outside-secret";
  writeFile(outside, "outside content\n", 0600);
  ASSERT_EQ(::chmod(outside.c_str(), 0600), 0);
  ASSERT_EQ(::link(outside.c_str(), (s.ws + "/linked.txt").c_str()), 0);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"linked.txt", 'f', "outside content\n", "", 0666}})), "");
  auto d = s.diff();
  ASSERT_EQ(d.items.size(), 1u);
  EXPECT_EQ(d.items[0].kind, ChangeKind::ModeChanged);
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->flushed, 1u);
  struct stat out {}, in {};
  ASSERT_EQ(::stat(outside.c_str(), &out), 0);
  ASSERT_EQ(::stat((s.ws + "/linked.txt").c_str(), &in), 0);
  EXPECT_EQ(out.st_mode & 07777, 0600u) << "the outside file's mode changed through the hard link";
  EXPECT_EQ(readAll(outside), "outside content\n");
  EXPECT_EQ(in.st_mode & 0777, landingMode(d.items[0].agent));
  EXPECT_NE(in.st_mode & 0777, 0600u);
  EXPECT_EQ(readAll(s.ws + "/linked.txt"), "outside content\n");
  EXPECT_NE(in.st_ino, out.st_ino);
  EXPECT_EQ(out.st_nlink, 1u);
  for (auto& e : fs::directory_iterator(s.ws)) EXPECT_EQ(e.path().filename().string().find(".airlock-flush"), std::string::npos);
}

TEST(Flush, HostEditBetweenDiffAndFlushIsNotFlushed) {
  Scenario s;
  writeFile(s.ws + "/a", "v1");
  writeFile(s.ws + "/b", "v1");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"a", 'f', "agent"}, {"b", 'f', "agent"}})), "");
  auto d = s.diff();
  ASSERT_EQ(d.items.size(), 2u);
  writeFile(s.ws + "/a", "user edit");  // after the diff, before the flush
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->flushed, 1u);
  EXPECT_EQ(rep->conflicts, 1u);
  EXPECT_EQ(readAll(s.ws + "/a"), "user edit");
  EXPECT_EQ(readAll(s.ws + "/b"), "agent");
  for (auto& it : rep->items) {
    if (it.path == "a") {
      EXPECT_NE(it.message.find("changed on the host"), std::string::npos);
    }
  }
}

TEST(Flush, ParentSwappedForSymlinkAfterReview) {
  Scenario s;
  writeFile(s.ws + "/dir/file", "v1");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"dir/file", 'f', "agent"}, {"dir/new", 'f', "agent"}})), "");
  auto d = s.diff();
  std::string outside = s.dir.path() + "/outside";
  writeFile(outside + "/file", "v1");  // same content as the baseline: only the path check can save us
  fs::rename(s.ws + "/dir", s.dir.path() + "/moved");
  ::symlink(outside.c_str(), (s.ws + "/dir").c_str());
  std::string before = treeListing(outside);
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->flushed, 0u);
  EXPECT_EQ(rep->conflicts, 2u);
  EXPECT_EQ(treeListing(outside), before) << "nothing may land outside the workspace";
  EXPECT_TRUE(fs::is_symlink(s.ws + "/dir"));
}

TEST(Flush, ParentSwappedUsingComponentWalkToo) {
  Scenario s;
  std::filesystem::create_directories(s.ws + "/dir");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"dir/x/new", 'f', "agent"}})), "");
  auto d = s.diff();
  std::string outside = s.dir.path() + "/outside";
  fs::create_directories(outside);
  fs::remove(s.ws + "/dir");
  ::symlink(outside.c_str(), (s.ws + "/dir").c_str());
  forceComponentWalk(true);
  auto rep = s.flushAll(d, {});
  forceComponentWalk(false);
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->conflicts, 1u);
  EXPECT_TRUE(fs::is_empty(outside));
}

TEST(Flush, DiskFullRollsBackEverything) {
  Scenario s;
  setUpRich(s);
  std::string before = treeListing(s.ws);
  auto d = s.diff();
  FlushHooks hooks;
  int writes = 0;
  hooks.writeFault = [&](std::string_view) { return ++writes == 4 ? ENOSPC : 0; };
  auto rep = s.flushAll(d, hooks);
  ASSERT_FALSE(rep);
  EXPECT_NE(rep.error().message.find("No space left"), std::string::npos) << rep.error().message;
  EXPECT_NE(rep.error().message.find("rolled back"), std::string::npos);
  EXPECT_EQ(treeListing(s.ws), before);
  auto again = s.flushAll(d, {});  // the same change set can be flushed once space is back
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(withoutEnv(treeListing(s.ws)), kRichAfter);
}

// Runs the flush in a child that SIGKILLs itself after `steps` steps.
void flushAndDie(Scenario& s, const DiffResult& d, size_t steps) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FlushHooks hooks;
    hooks.afterStep = [&](size_t n) {
      if (n == steps) ::raise(SIGKILL);
    };
    (void)s.flushAll(d, hooks);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child must have been killed mid-flush";
}

/// "uid:gid" of `path` (not following a symlink).
std::string ownerOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
}

/// Every path under `root` owned by uid 0.
std::vector<std::string> rootOwned(const std::string& root) {
  std::vector<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (ownerOf(e.path().string()).starts_with("0:")) out.push_back(e.path().string());
  return out;
}

/// A workspace owned by 1001:1001 with one file of its owner and one of
/// 1002:1003, and an agent that edits both, adds nested files, a symlink and
/// a directory.
void setUpOwnedWorkspace(Scenario& s) {
  writeFile(s.ws + "/mine.txt", "old\n");
  writeFile(s.ws + "/theirs.txt", "old\n");
  ASSERT_EQ(::chown(s.ws.c_str(), 1001, 1001), 0);
  ASSERT_EQ(::chown((s.ws + "/mine.txt").c_str(), 1001, 1001), 0);
  ASSERT_EQ(::chown((s.ws + "/theirs.txt").c_str(), 1002, 1003), 0);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"mine.txt", 'f', "new\n"},
                               {"theirs.txt", 'f', "new\n"},
                               {"a/b/new.c", 'f', "int x;\n"},
                               {"link", 'l', "", "mine.txt", 0777},
                               {"newdir/", 'd', "", "", 0755}})),
            "");
}

void expectOwnedWorkspace(const Scenario& s) {
  EXPECT_EQ(readAll(s.ws + "/a/b/new.c"), "int x;\n");
  for (const char* p : {"a", "a/b", "a/b/new.c", "link", "newdir", "mine.txt"}) EXPECT_EQ(ownerOf(s.ws + "/" + p), "1001:1001") << p;
  EXPECT_EQ(ownerOf(s.ws + "/theirs.txt"), "1002:1003") << "a replaced file keeps its owner";
  EXPECT_EQ(rootOwned(s.ws), std::vector<std::string>{});
}

// Issue 14 item 4: `sudo airlock run` left every file the agent created in
// the user's project owned by root (and every file it edited).
TEST(Flush, AsRootNewFilesBelongToTheWorkspaceOwnerAndReplacedOnesKeepTheirs) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: gives files to other users";
  Scenario s;
  setUpOwnedWorkspace(s);
  auto owner = workspaceOwnerForFlush(s.ws, 0);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->uid, 1001u);
  EXPECT_EQ(owner->gid, 1001u);
  s.owner = owner;
  auto rep = s.flushAll(s.diff(), {});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->conflicts, 0u);
  expectOwnedWorkspace(s);
}

TEST(Flush, AsRootAnInterruptedFlushIsCompletedWithTheSameOwners) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: gives files to other users";
  Scenario s;
  setUpOwnedWorkspace(s);
  s.owner = workspaceOwnerForFlush(s.ws, 0);
  auto d = s.diff();
  flushAndDie(s, d, 2);
  auto rec = recoverFlush(s.ws, s.state, RecoveryMode::Complete, s.owner);
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_TRUE(rec->found);
  expectOwnedWorkspace(s);
}

TEST(Flush, OwnerIsOnlyGivenWhenRootFlushesAnotherUsersWorkspace) {
  Scenario s;
  EXPECT_FALSE(workspaceOwnerForFlush(s.ws, 1001)) << "a user's own files are already theirs";
  if (::geteuid() == 0) {
    EXPECT_FALSE(workspaceOwnerForFlush(s.ws, 0)) << "root's workspace needs no chown";
    ASSERT_EQ(::chown(s.ws.c_str(), 1001, 1002), 0);
    EXPECT_EQ(workspaceOwnerForFlush(s.ws, 0)->gid, 1002u);
  }
  EXPECT_FALSE(workspaceOwnerForFlush(s.ws + "/missing", 0));
}

// Issue 17 item 2: sessions share a workspace, so their flushes are
// serialised. A second flush while one runs says it waits, waits, and then
// works on the workspace the first one left (here the same changes: each
// is already there or, for the paths the first one removed or replaced, a
// conflict), never on a half-written one. (Before: it failed with exit 73.)
TEST(Flush, ASecondFlushWaitsForTheFirstToFinish) {
  Scenario s;
  setUpRich(s);
  auto d = s.diff();
  int started[2], release[2];
  ASSERT_EQ(::pipe(started), 0);
  ASSERT_EQ(::pipe(release), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FlushHooks hooks;
    hooks.afterStep = [&](size_t n) {
      if (n != 1) return;
      char c = 1;
      (void)!::write(started[1], &c, 1);
      (void)!::read(release[0], &c, 1);
    };
    auto first = s.flushAll(d, hooks);
    ::_exit(first && first->conflicts == 0 ? 0 : 1);
  }
  char c = 0;
  ASSERT_EQ(::read(started[0], &c, 1), 1);
  std::atomic<bool> told{false};
  s.waiting = [&](const std::string& line) {
    EXPECT_NE(line.find("waiting for another airlock process flushing into " + s.ws), std::string::npos) << line;
    told = true;
    ASSERT_EQ(::write(release[1], &c, 1), 1);  // the first flush goes on only once this one waits
  };
  auto second = s.flushAll(d, {});
  int status = 0;
  ::waitpid(pid, &status, 0);
  for (int fd : {started[0], started[1], release[0], release[1]}) ::close(fd);
  ASSERT_TRUE(told);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the first flush did not land whole";
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->flushed + second->conflicts, d.items.size());
  EXPECT_EQ(withoutEnv(treeListing(s.ws)), kRichAfter) << "the second flush changed what the first wrote";
}

TEST(Flush, KilledMidFlushIsCompletedByRecovery) {
  for (size_t n : {1u, 5u, 11u}) {
    Scenario s;
    setUpRich(s);
    auto d = s.diff();
    flushAndDie(s, d, n);
    auto blocked = s.flushAll(d, {});
    ASSERT_FALSE(blocked) << "a new flush must wait for recovery";
    EXPECT_NE(blocked.error().message.find("interrupted"), std::string::npos);
    auto rec = recoverFlush(s.ws, s.state, RecoveryMode::Complete);
    ASSERT_TRUE(rec) << rec.error().message;
    EXPECT_TRUE(rec->found);
    EXPECT_TRUE(rec->notes.empty()) << rec->notes[0];
    EXPECT_EQ(withoutEnv(treeListing(s.ws)), kRichAfter) << "after kill at step " << n;
    auto none = recoverFlush(s.ws, s.state, RecoveryMode::Complete);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->found);
  }
}

// The journal pointer must not depend on the directory the flush ran in: a
// flush started with a relative session path, killed mid-way, is completed
// from another directory.
TEST(Flush, KilledFlushWithRelativeSessionIsRecoveredFromAnotherDirectory) {
  Scenario s;
  setUpRich(s);
  auto d = s.diff();
  char cwd[PATH_MAX];
  ASSERT_TRUE(::getcwd(cwd, sizeof cwd));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::chdir(s.dir.path().c_str()) != 0) ::_exit(3);
    std::vector<const DiffItem*> all;
    for (const auto& it : d.items) all.push_back(&it);
    FlushHooks hooks;
    hooks.afterStep = [](size_t n) {
      if (n == 3) ::raise(SIGKILL);
    };
    (void)flush(all, FlushContext{"ws", "session", "state", hooks});
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child must have been killed mid-flush";
  ASSERT_EQ(::chdir("/"), 0);
  auto rec = recoverFlush(s.ws, s.state, RecoveryMode::Complete);
  ASSERT_EQ(::chdir(cwd), 0);
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_TRUE(rec->found);
  EXPECT_EQ(rec->sessionDir, s.session);
  EXPECT_EQ(withoutEnv(treeListing(s.ws)), kRichAfter);
}

// A pointer whose session was deleted cannot be replayed, but must not block
// every later flush into the workspace.
TEST(Flush, PointerToDeletedSessionNoLongerBlocks) {
  Scenario s;
  setUpRich(s);
  auto d = s.diff();
  flushAndDie(s, d, 2);
  ASSERT_TRUE(removeTree(s.session + "/flush"));
  auto rec = recoverFlush(s.ws, s.state, RecoveryMode::Complete);
  ASSERT_TRUE(rec) << rec.error().message;
  EXPECT_TRUE(rec->found);
  ASSERT_EQ(rec->notes.size(), 1u);
  EXPECT_NE(rec->notes[0].find("by hand"), std::string::npos) << rec->notes[0];
  auto none = recoverFlush(s.ws, s.state, RecoveryMode::Complete);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(none->found);
}

TEST(Flush, KilledMidFlushIsRolledBackOnRequest) {
  for (size_t n : {1u, 6u, 11u}) {
    Scenario s;
    setUpRich(s);
    std::string before = treeListing(s.ws);
    auto d = s.diff();
    flushAndDie(s, d, n);
    auto rec = recoverFlush(s.ws, s.state, RecoveryMode::RollBack);
    ASSERT_TRUE(rec) << rec.error().message;
    EXPECT_TRUE(rec->found);
    EXPECT_EQ(rec->undone, n);
    EXPECT_EQ(treeListing(s.ws), before) << "after kill at step " << n;
  }
}

TEST(Flush, DirectoryWithHostFilesIsKept) {
  Scenario s;
  writeFile(s.ws + "/dir/a", "a");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".wh.dir", 'f'}})), "");
  auto d = s.diff();
  writeFile(s.ws + "/dir/user-new", "mine");
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(readAll(s.ws + "/dir/user-new"), "mine");
  EXPECT_FALSE(fs::exists(s.ws + "/dir/a"));
  EXPECT_EQ(rep->conflicts, 1u);
}

TEST(Flush, StagedContentTamperedAfterReview) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"a", 'f', "reviewed"}})), "");
  auto d = s.diff();
  writeFile(d.items[0].staged, "evil", 0600);
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->conflicts, 1u);
  EXPECT_FALSE(fs::exists(s.ws + "/a"));
}

TEST(Flush, CaseOnlyRenameAndWeirdNames) {
  Scenario s;
  writeFile(s.ws + "/README.md", "doc");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".wh.README.md", 'f'},
                               {"readme.md", 'f', "doc"},
                               {"new\nline", 'f', "n"},
                               {"bad\xff", 'f', "b"},
                               {"-rf", 'f', "d"}})),
            "");
  auto d = s.diff();
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_EQ(rep->flushed, 5u);
  EXPECT_EQ(treeListing(s.ws), "-rf f d 644\nbad\xff f b 644\nnew\nline f n 644\nreadme.md f doc 644\n");
}

TEST(Flush, ExcludedAndConflictItemsAreRefused) {
  Scenario s;
  writeFile(s.ws + "/.env", "SECRET=1");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".env", 'f', "SECRET=stolen"}})), "");
  auto d = s.diff();
  ASSERT_EQ(d.items.size(), 1u);
  auto rep = s.flushAll(d, {});
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->conflicts, 1u);
  EXPECT_EQ(readAll(s.ws + "/.env"), "SECRET=1");
}

// The adversarial streams: each is refused and leaves the workspace (and the
// host outside it) exactly as it was.
TEST(Adversarial, HostileChangeSetsLeaveWorkspaceUnchanged) {
  std::vector<std::vector<test::TarEntry>> streams = {
      {{"../escape", 'f', "x"}},
      {{"/tmp/airlock-abs-escape", 'f', "x"}},
      {{"x", 'l', "", "/etc"}, {"x/passwd", 'f', "root::0:0"}},
      {{"h", 'h', "", "/etc/passwd"}},
      {{"dev", 'c'}},
      {{"fifo", 'p'}},
      {{"lnk/passwd", 'f', "x"}},  // lnk is a symlink in the baseline
  };
  for (size_t i = 0; i < streams.size(); ++i) {
    Scenario s;
    writeFile(s.ws + "/file", "data");
    ::symlink("/etc", (s.ws + "/lnk").c_str());
    s.snapshot();
    std::string before = treeListing(s.ws);
    std::string err = s.loadTar(makeTar(streams[i]));
    if (err.empty()) {
      auto r = s.engine()->run();
      if (r) {  // FIFOs and device nodes: listed as skipped, and a flush of them writes nothing
        ASSERT_FALSE(r->items.empty()) << "stream " << i;
        for (const auto& it : r->items) EXPECT_EQ(it.kind, ChangeKind::Skipped) << "stream " << i;
        auto rep = s.flushAll(*r, {});
        ASSERT_TRUE(rep);
        EXPECT_EQ(rep->flushed, 0u);
      } else {
        EXPECT_EQ(r.error().code, exit_code::kUnsafeChangeSet) << "stream " << i << ": " << r.error().message;
      }
    }
    EXPECT_EQ(treeListing(s.ws), before) << "stream " << i;
    EXPECT_FALSE(fs::exists(s.dir.path() + "/escape"));
    EXPECT_FALSE(fs::exists("/tmp/airlock-abs-escape"));
  }
}

}  // namespace
}  // namespace airlock::workspace
