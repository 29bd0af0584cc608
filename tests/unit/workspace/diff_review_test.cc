#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/stat.h>

#include <deque>
#include <functional>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/sha256.h"
#include "test_util.h"
#include "workspace/changeset.h"
#include "workspace/diff.h"
#include "workspace/pending.h"
#include "workspace/review.h"

namespace airlock::workspace {
namespace {

using test::makeTar;
using test::Scenario;
using test::writeFile;

std::map<std::string, const DiffItem*> byPath(const DiffResult& r) {
  std::map<std::string, const DiffItem*> m;
  for (const auto& it : r.items) m[it.path] = &it;
  return m;
}

TEST(Diff, AllKinds) {
  Scenario s;
  writeFile(s.ws + "/mod.txt", "a\nb\nc\n");
  writeFile(s.ws + "/mode.sh", "x", 0644);
  writeFile(s.ws + "/del.txt", "bye");
  ::symlink("a", (s.ws + "/lchg").c_str());
  ::symlink("a", (s.ws + "/lrm").c_str());
  writeFile(s.ws + "/f2d", "file");
  std::filesystem::create_directories(s.ws + "/d2f");
  writeFile(s.ws + "/d2f/inner", "i");
  std::filesystem::create_directories(s.ws + "/rmdir/empty");
  writeFile(s.ws + "/same.txt", "same");
  s.snapshot();
  std::string err = s.loadTar(makeTar({
      {"mod.txt", 'f', "a\nB\nc\nd\n"},
      {"mode.sh", 'f', "x", "", 0755},
      {".wh.del.txt", 'f'},
      {"lchg", 'l', "", "b", 0777},
      {".wh.lrm", 'f'},
      {"ladd", 'l', "", "/etc", 0777},
      {"f2d", 'd', "", "", 0755},
      {".wh.d2f", 'f'},
      {"d2f", 'f', "now a file"},
      {".wh.rmdir", 'f'},
      {"newdir/", 'd', "", "", 0755},
      {"newdir/emptysub/", 'd', "", "", 0755},
      {"added.txt", 'f', "new\n"},
      {"same.txt", 'f', "same"},
      {"suid", 'f', "s", "", 04755},
  }));
  ASSERT_EQ(err, "");
  auto r = s.diff();
  auto m = byPath(r);
  auto kind = [&](const char* p) { return m.count(p) ? m[p]->kind : ChangeKind(-1); };
  EXPECT_EQ(kind("mod.txt"), ChangeKind::Modified);
  EXPECT_EQ(m["mod.txt"]->linesAdded, 2u);
  EXPECT_EQ(m["mod.txt"]->linesRemoved, 1u);
  EXPECT_EQ(kind("mode.sh"), ChangeKind::ModeChanged);
  EXPECT_EQ(kind("del.txt"), ChangeKind::Deleted);
  EXPECT_EQ(kind("lchg"), ChangeKind::SymlinkChanged);
  EXPECT_EQ(kind("lrm"), ChangeKind::SymlinkRemoved);
  EXPECT_EQ(kind("ladd"), ChangeKind::SymlinkAdded);
  EXPECT_TRUE(m["ladd"]->linkEscapes);
  EXPECT_EQ(kind("f2d"), ChangeKind::TypeChanged);
  EXPECT_EQ(kind("d2f"), ChangeKind::TypeChanged);
  EXPECT_EQ(kind("d2f/inner"), ChangeKind::Deleted) << "contents of a replaced directory are deleted";
  EXPECT_EQ(kind("rmdir"), ChangeKind::DirRemoved);
  EXPECT_EQ(kind("rmdir/empty"), ChangeKind::DirRemoved);
  EXPECT_EQ(kind("newdir"), ChangeKind::DirAdded);
  EXPECT_EQ(kind("newdir/emptysub"), ChangeKind::DirAdded);
  EXPECT_EQ(kind("added.txt"), ChangeKind::Added);
  EXPECT_FALSE(m.count("same.txt")) << "a copy-up without change is not a change";
  EXPECT_TRUE(m["suid"]->specialBitsDropped);
  for (const auto& it : r.items) EXPECT_FALSE(it.conflict) << it.path;
  auto patch = s.engine()->patch(*m["mod.txt"], false);
  ASSERT_TRUE(patch);
  EXPECT_NE(patch->find("-b\n+B\n"), std::string::npos) << *patch;
  EXPECT_NE(patch->find("--- a/mod.txt"), std::string::npos);
  auto colored = s.engine()->patch(*m["mod.txt"], true);
  EXPECT_NE(colored->find("\x1b[32m+B"), std::string::npos);
}

TEST(Diff, OpaqueDirectoryDeletesUnlistedBaselineEntries) {
  Scenario s;
  writeFile(s.ws + "/gen/a", "a");
  writeFile(s.ws + "/gen/sub/b", "b");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"gen/", 'd', "", "", 0755}, {"gen/.wh..wh..opq", 'f'}, {"gen/a", 'f', "a"}})), "");
  auto r = s.diff();
  auto m = byPath(r);
  EXPECT_FALSE(m.count("gen/a"));
  ASSERT_TRUE(m.count("gen/sub/b"));
  EXPECT_EQ(m["gen/sub/b"]->kind, ChangeKind::Deleted);
  EXPECT_EQ(m["gen/sub"]->kind, ChangeKind::DirRemoved);
}

TEST(Diff, ConflictWhenHostChangedAndAlreadyAppliedIsSkipped) {
  Scenario s;
  writeFile(s.ws + "/edited", "v1");
  writeFile(s.ws + "/same-edit", "v1");
  writeFile(s.ws + "/deleted-on-host", "v1");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"edited", 'f', "agent"}, {"same-edit", 'f', "v2"}, {"deleted-on-host", 'f', "agent"},
                               {"created-on-host", 'f', "agent"}})),
            "");
  writeFile(s.ws + "/edited", "user");
  writeFile(s.ws + "/same-edit", "v2");
  std::filesystem::remove(s.ws + "/deleted-on-host");
  writeFile(s.ws + "/created-on-host", "user");
  auto r = s.diff();
  auto m = byPath(r);
  EXPECT_TRUE(m["edited"]->conflict);
  EXPECT_TRUE(m["deleted-on-host"]->conflict);
  EXPECT_TRUE(m["created-on-host"]->conflict);
  EXPECT_FALSE(m.count("same-edit"));
  EXPECT_EQ(r.alreadyApplied, 1u);
}

TEST(Diff, BinaryAndSizeCap) {
  Scenario s;
  writeFile(s.ws + "/bin", std::string("\0\1\2", 3));
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"bin", 'f', std::string("\0\1\3", 3)}, {"big", 'f', std::string(2 << 20, 'x')}})), "");
  auto r = s.diff();
  auto m = byPath(r);
  EXPECT_TRUE(m["bin"]->binary);
  EXPECT_TRUE(m["big"]->tooLarge);
  auto p = s.engine()->patch(*m["big"], false);
  ASSERT_TRUE(p);
  EXPECT_NE(p->find("content not shown"), std::string::npos);
  EXPECT_LT(p->size(), 1000u);
}

// An entry below a baseline symlink is an unsafe change set (exit 74), not an
// internal error (72): whether the link points outside or inside.
TEST(Diff, ChangeBelowBaselineSymlinkIsRefusedAsUnsafe) {
  for (const char* target : {"/usr/lib", "sub"}) {
    Scenario s;
    std::filesystem::create_directories(s.ws + "/sub");
    ::symlink(target, (s.ws + "/lib").c_str());
    s.snapshot();
    ASSERT_EQ(s.loadTar(makeTar({{"lib/x", 'f', "payload"}})), "");
    auto r = s.engine()->run();
    ASSERT_FALSE(r) << target;
    EXPECT_EQ(r.error().code, exit_code::kUnsafeChangeSet) << target;
    EXPECT_NE(r.error().message.find("'lib/x' lies below 'lib'"), std::string::npos) << r.error().message;
    EXPECT_FALSE(std::filesystem::exists(s.ws + "/sub/x"));
  }
}

// The diff shows the mode that lands (not libgit2's 100644), says when
// setuid/setgid/sticky are stripped, and shows old and new mode for
// mode-only changes.
TEST(Diff, PatchShowsTheModeThatLands) {
  Scenario s;
  writeFile(s.ws + "/tool.sh", "echo hi\n", 0644);
  writeFile(s.ws + "/both.sh", "old\n", 0644);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"run.sh", 'f', "#!/bin/sh\n", "", 0755},
                               {"suid", 'f', "#!/bin/sh\n", "", 04755},
                               {"tool.sh", 'f', "echo hi\n", "", 0755},
                               {"both.sh", 'f', "new\n", "", 0755}})),
            "");
  auto r = s.diff();
  auto m = byPath(r);
  auto eng = s.engine();
  auto added = eng->patch(*m["run.sh"], false);
  ASSERT_TRUE(added);
  EXPECT_NE(added->find("mode 0755, executable\n"), std::string::npos) << *added;
  EXPECT_NE(added->find("new file mode 100755"), std::string::npos) << *added;
  EXPECT_EQ(added->find("100644"), std::string::npos) << *added;
  auto suid = eng->patch(*m["suid"], false);
  ASSERT_TRUE(suid);
  EXPECT_NE(suid->find("mode 0755, executable (the agent set 4755; setuid/setgid/sticky bits are stripped on flush)"),
            std::string::npos)
      << *suid;
  EXPECT_NE(summaryTable(r.items).find("setuid/setgid/sticky stripped"), std::string::npos);
  auto modeOnly = eng->patch(*m["tool.sh"], false);
  ASSERT_TRUE(modeOnly);
  EXPECT_EQ(m["tool.sh"]->kind, ChangeKind::ModeChanged);
  EXPECT_NE(modeOnly->find("mode 0644 -> 0755, executable"), std::string::npos) << *modeOnly;
  EXPECT_NE(modeOnly->find("old mode 100644\nnew mode 100755"), std::string::npos) << *modeOnly;
  auto both = eng->patch(*m["both.sh"], false);
  ASSERT_TRUE(both);
  EXPECT_NE(both->find("old mode 100644\nnew mode 100755\nindex "), std::string::npos) << *both;
  EXPECT_NE(both->find("+new"), std::string::npos) << *both;
  // What the diff said is what lands.
  auto rep = s.flushAll(r, {});
  ASSERT_TRUE(rep);
  ASSERT_EQ(rep->flushed, 4u);
  struct stat st {};
  ASSERT_EQ(::stat((s.ws + "/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(::stat((s.ws + "/suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST(Diff, BinaryDiffShowsSha256OfBothSides) {
  Scenario s;
  std::string oldBin("\0\1\2", 3), newBin("\0\1\3", 3);
  writeFile(s.ws + "/bin", oldBin);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"bin", 'f', newBin}})), "");
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 1u);
  auto p = s.engine()->patch(r.items[0], false);
  ASSERT_TRUE(p);
  EXPECT_NE(p->find(fmt::format("sha256 {} -> {}", sha256Hex(oldBin).substr(0, 12), sha256Hex(newBin).substr(0, 12))),
            std::string::npos)
      << *p;
  EXPECT_EQ(r.items[0].agent.sha256, sha256Hex(newBin)) << "the full digest (for --json)";
}

TEST(Diff, SecretWrittenByAgentIsExcluded) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".env", 'f', "STOLEN=1"}, {".airlockignore", 'f', "!*"}})), "");
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 2u);
  for (auto& it : r.items) EXPECT_EQ(it.excluded, IgnoreVerdict::Secret);
  auto d = decide(r.items, ReviewMode::All, *s.engine(), nullptr, false);
  for (auto x : *d) EXPECT_EQ(x, Decision::Excluded);
}

TEST(Review, HeldBackAndBuildEntries) {
  for (const char* p : {".git/config", ".git/hooks/pre-commit", ".git/modules/x/config", ".husky/pre-push",
                        ".pre-commit-config.yaml", ".github/workflows/ci.yml", ".gitlab-ci.yml", ".gitlab/x",
                        ".circleci/config.yml", ".travis.yml", ".devcontainer/devcontainer.json", ".vscode/tasks.json",
                        ".vscode/launch.json", ".envrc", "sub/.envrc", ".gitmodules", ".gitattributes",
                        ".claude/settings.json", ".claude/settings.local.json", ".airlock.yaml",
                        ".git/objects/ab/cd", ".vscode/settings.json"})
    EXPECT_TRUE(isHeldBackPath(p)) << p;
  for (const char* p : {"src/main.c", ".github/CODEOWNERS"})
    EXPECT_FALSE(isHeldBackPath(p)) << p;
  for (const char* p : {"Makefile", "sub/Makefile", "Justfile", "Taskfile.yml", "Taskfile.yaml", "pyproject.toml",
                        "setup.py", "Jenkinsfile", "package.json"})
    EXPECT_TRUE(isBuildEntryPath(p)) << p;
  EXPECT_FALSE(isBuildEntryPath("src/make.c"));
}

TEST(Review, AutoHoldsBackSymlinksOutOfTheWorkspace) {
  Scenario s;
  writeFile(s.ws + "/src/a.c", "a");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".wh.src", 'f'},
                               {"src", 'l', "", "/tmp", 0777},
                               {"key", 'l', "", "/root/.ssh/id_rsa", 0777},
                               {"up", 'l', "", "../../etc", 0777},
                               {"inside", 'l', "", "docs/readme", 0777}})),
            "");
  auto r = s.diff();
  auto m = byPath(r);
  for (const char* p : {"src", "key", "up"}) {
    ASSERT_TRUE(m.count(p)) << p;
    EXPECT_TRUE(m[p]->heldBack) << p << " points outside the workspace";
  }
  EXPECT_FALSE(m["inside"]->heldBack);
  auto eng = s.engine();
  auto autoD = decide(r.items, ReviewMode::Auto, *eng, nullptr, false);
  ASSERT_TRUE(autoD);
  for (size_t i = 0; i < r.items.size(); ++i)
    EXPECT_EQ((*autoD)[i], r.items[i].linkEscapes ? Decision::HeldBack : Decision::Accepted) << r.items[i].path;
}

TEST(Review, NewDirectoryHoldingOnlyHeldBackChangesIsHeldBack) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".git/", 'd', "", "", 0755},
                               {".git/hooks/", 'd', "", "", 0755},
                               {".git/hooks/pre-commit", 'f', "rm -rf ~", "", 0755},
                               {"src/", 'd', "", "", 0755},
                               {"src/new.c", 'f', "int x;"},
                               {"mixed/", 'd', "", "", 0755},
                               {"mixed/.envrc", 'f', "export A=1"},
                               {"mixed/ok.txt", 'f', "ok"}})),
            "");
  auto r = s.diff();
  auto m = byPath(r);
  for (const char* dir : {".git", ".git/hooks"}) {
    ASSERT_TRUE(m.count(dir)) << dir;
    EXPECT_TRUE(m[dir]->heldBack) << dir << " would be flushed empty (an empty .git breaks git)";
  }
  for (const char* dir : {"src", "mixed"}) {
    ASSERT_TRUE(m.count(dir)) << dir;
    EXPECT_FALSE(m[dir]->heldBack) << dir;
  }
  EXPECT_TRUE(m["mixed/.envrc"]->heldBack);
}

TEST(Review, PoliciesAndPackageJsonScripts) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"a.c", 'f', "a"},
                               {".git/hooks/pre-commit", 'f', "rm -rf ~", "", 0755},
                               {".envrc", 'f', "export A=1\n"},
                               {"Makefile", 'f', "all:\n"},
                               {"package.json", 'f', "{\"scripts\":{\"postinstall\":\"x\"}}"},
                               {"web/package.json", 'f', "{\"name\":\"x\"}"}})),
            "");
  auto r = s.diff();
  auto m = byPath(r);
  EXPECT_TRUE(m[".git/hooks/pre-commit"]->heldBack);
  EXPECT_TRUE(m["Makefile"]->buildEntry);
  EXPECT_TRUE(m["package.json"]->buildEntry);
  EXPECT_FALSE(m["web/package.json"]->buildEntry);
  auto eng = s.engine();
  auto autoD = decide(r.items, ReviewMode::Auto, *eng, nullptr, false);
  ASSERT_TRUE(autoD);
  // .git is never flushed, in any mode.
  for (size_t i = 0; i < r.items.size(); ++i)
    EXPECT_EQ((*autoD)[i], r.items[i].gitMetadata ? Decision::GitMetadata
                           : r.items[i].heldBack  ? Decision::HeldBack
                                                  : Decision::Accepted)
        << r.items[i].path;
  auto none = decide(r.items, ReviewMode::None, *eng, nullptr, false);
  for (size_t i = 0; i < r.items.size(); ++i)
    EXPECT_EQ((*none)[i], r.items[i].gitMetadata ? Decision::GitMetadata : Decision::Unreviewed) << r.items[i].path;
  auto all = decide(r.items, ReviewMode::All, *eng, nullptr, false);
  for (size_t i = 0; i < r.items.size(); ++i)
    EXPECT_EQ((*all)[i], r.items[i].gitMetadata ? Decision::GitMetadata : Decision::Accepted) << r.items[i].path;
  std::string table = summaryTable(r.items);
  EXPECT_NE(table.find("held back"), std::string::npos);
  EXPECT_NE(table.find("build entry point"), std::string::npos);
  EXPECT_NE(table.find("+1 -0"), std::string::npos);
}

TEST(Review, InteractiveWithoutTtyNamesTheFlags) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"a", 'f', "a"}})), "");
  auto r = s.diff();
  auto d = decide(r.items, ReviewMode::Interactive, *s.engine(), nullptr, false);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("--review=auto"), std::string::npos);
  EXPECT_NE(d.error().message.find("--review=none"), std::string::npos);
  EXPECT_FALSE(parseReviewMode("bogus"));
}

class FakeTerminal : public ReviewTerminal {
 public:
  explicit FakeTerminal(std::deque<std::string> answers) : answers_(std::move(answers)) {}
  void print(std::string_view t) override { out += t; }
  std::optional<std::string> readLine() override {
    if (answers_.empty()) return std::nullopt;
    auto a = answers_.front();
    answers_.pop_front();
    return a;
  }
  void page(const std::string& text) override { paged += text; }
  std::string out, paged;

 private:
  std::deque<std::string> answers_;
};

TEST(Review, InteractiveFlow) {
  Scenario s;
  writeFile(s.ws + "/conflict", "v1");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"a", 'f', "1\n"}, {"b", 'f', "2\n"}, {"c", 'f', "3\n"}, {"conflict", 'f', "agent"},
                               {"d", 'f', "4\n"}, {"e", 'f', "5\n"}})),
            "");
  writeFile(s.ws + "/conflict", "user");
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 6u);
  auto eng = s.engine();
  // a: show diff then accept; b: junk then reject; c: accept; conflict: not asked; d: accept rest (d, e).
  FakeTerminal t({"d", "a", "what", "r", "a", "A"});
  auto d = decide(r.items, ReviewMode::Interactive, *eng, &t, true);
  ASSERT_TRUE(d) << d.error().message;
  std::vector<Decision> want = {Decision::Accepted, Decision::Rejected, Decision::Accepted,
                                Decision::Conflict, Decision::Accepted, Decision::Accepted};
  EXPECT_EQ(*d, want);
  EXPECT_NE(t.paged.find("+1"), std::string::npos);
  EXPECT_NE(t.out.find("kind"), std::string::npos) << "summary table first";
  EXPECT_NE(t.out.find("R = reject all remaining"), std::string::npos);
  FakeTerminal q({"a", "q"});
  d = decide(r.items, ReviewMode::Interactive, *eng, &q, true);
  EXPECT_EQ((*d)[0], Decision::Accepted);
  EXPECT_EQ((*d)[1], Decision::Rejected);
  EXPECT_EQ((*d)[5], Decision::Rejected) << "quit rejects the rest";
  FakeTerminal eof({});
  d = decide(r.items, ReviewMode::Interactive, *eng, &eof, true);
  EXPECT_EQ((*d)[0], Decision::Rejected) << "end of input rejects";
}

// Rejecting a new directory keeps it off the host even when a file in it is
// accepted: that file stays pending too ("blocked"), and the review says so.
// `r` is "rejected"; "held back" is only what the held-back rules keep.
TEST(Review, RejectedNewDirectoryKeepsItsAcceptedChildPending) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".github/", 'd', "", "", 0755},
                               {".github/workflows/", 'd', "", "", 0755},
                               {".github/workflows/ci.yml", 'f', "on: push\n"},
                               {"docs/", 'd', "", "", 0755},
                               {"docs/a.md", 'f', "a\n"}})),
            "");
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 5u);
  auto eng = s.engine();
  // .github: accept; .github/workflows (held back by rule): reject; ci.yml: accept; docs: accept; docs/a.md: accept.
  FakeTerminal t({"a", "r", "a", "a", "a"});
  auto d = decide(r.items, ReviewMode::Interactive, *eng, &t, true);
  ASSERT_TRUE(d) << d.error().message;
  std::vector<Decision> want = {Decision::Accepted, Decision::Rejected, Decision::Blocked, Decision::Accepted,
                                Decision::Accepted};
  EXPECT_EQ(*d, want);
  EXPECT_NE(t.out.find(".github/workflows/ci.yml stays pending: its new directory '.github/workflows' was not accepted"),
            std::string::npos)
      << t.out;
  std::string table = summaryTable(r.items, &*d);
  EXPECT_NE(table.find("rejected     .github/workflows"), std::string::npos) << table;
  EXPECT_NE(table.find("blocked      .github/workflows/ci.yml"), std::string::npos) << table;
  EXPECT_NE(table.find("new directory '.github/workflows' not accepted: stays pending"), std::string::npos) << table;
  std::vector<const DiffItem*> accepted;
  for (size_t i = 0; i < r.items.size(); ++i)
    if ((*d)[i] == Decision::Accepted) accepted.push_back(&r.items[i]);
  auto rep = flush(accepted, FlushContext{s.ws, s.session, s.state, {}});
  ASSERT_TRUE(rep) << rep.error().message;
  EXPECT_TRUE(std::filesystem::is_directory(s.ws + "/.github"));
  EXPECT_FALSE(std::filesystem::exists(s.ws + "/.github/workflows")) << "a rejected new directory is not created";
  EXPECT_EQ(test::readAll(s.ws + "/docs/a.md"), "a\n");
  // Keeping it held back (auto) blocks the child the same way when the child itself is not held back.
  auto autoD = decide(r.items, ReviewMode::Auto, *eng, nullptr, false);
  ASSERT_TRUE(autoD);
  EXPECT_EQ((*autoD)[1], Decision::HeldBack);
  EXPECT_EQ((*autoD)[2], Decision::HeldBack);
}

// FIFOs, sockets, device nodes and oversized files are listed as skipped with
// why, decided without asking, never flushed and never kept in pending/.
TEST(Review, SkippedEntriesAreListedAndNeverFlushed) {
  Scenario s;
  s.snapshot();
  TarLimits lim;
  lim.maxEntryBytes = 100;
  auto cs = ChangeSet::fromTarBuffer(
      makeTar({{"pipe", 'p'}, {"big.bin", 'f', std::string(200, 'x')}, {"ok.txt", 'f', "ok\n"}}),
      s.session + "/staged", lim);
  ASSERT_TRUE(cs) << cs.error().message;
  s.changes = std::move(*cs);
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 3u);
  auto m = byPath(r);
  ASSERT_TRUE(m.count("pipe"));
  EXPECT_EQ(m["pipe"]->kind, ChangeKind::Skipped);
  EXPECT_EQ(m["big.bin"]->kind, ChangeKind::Skipped);
  auto eng = s.engine();
  auto all = decide(r.items, ReviewMode::All, *eng, nullptr, false);
  ASSERT_TRUE(all);
  std::string table = summaryTable(r.items, &*all);
  EXPECT_NE(table.find("skipped      pipe  [skipped: FIFO; only files, directories and symlinks are reviewed]"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("[skipped: file of 200 bytes, over the limit of 100 bytes for one file]"), std::string::npos)
      << table;
  FakeTerminal t({"a"});
  auto inter = decide(r.items, ReviewMode::Interactive, *eng, &t, true);
  ASSERT_TRUE(inter);
  EXPECT_EQ(*inter, (std::vector<Decision>{Decision::Skipped, Decision::Accepted, Decision::Skipped}));
  EXPECT_NE(t.out.find("pipe: skipped (FIFO;"), std::string::npos) << t.out;
  auto p = eng->patch(*m["pipe"], false);
  ASSERT_TRUE(p);
  EXPECT_NE(p->find("SKIPPED: FIFO"), std::string::npos);
  auto rep = s.flushAll(r, {});  // even when handed to flush, they are refused
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->flushed, 1u);
  EXPECT_FALSE(std::filesystem::exists(s.ws + "/pipe"));
  EXPECT_FALSE(std::filesystem::exists(s.ws + "/big.bin"));
  std::vector<bool> keep = {true, false, true};
  auto kept = keepPending(r.items, *all, keep, *eng, s.session);
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, "") << "skipped entries have nothing to keep";
}

// What an FdTerminal writes to its descriptor, read from the other end of a socketpair.
std::string written(const std::function<void(int fd)>& f) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  f(sv[0]);
  ::close(sv[0]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(sv[1], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(sv[1]);
  return out;
}

// A $PAGER that cannot run or fails at once must not swallow the diff.
TEST(FdTerminal, BadPagerFallsBackToTheTerminalAndSaysSoOnce) {
  for (const char* pager : {"/nonexistent/pager", "false"}) {
    std::string out = written([&](int fd) {
      FdTerminal term(fd, pager);
      term.page("first diff\n");
      term.page("second diff\n");
    });
    EXPECT_NE(out.find("first diff\n"), std::string::npos) << pager << ": " << out;
    EXPECT_NE(out.find("second diff\n"), std::string::npos) << pager << ": " << out;
    size_t note = out.find(fmt::format("airlock: pager '{}'", pager));
    EXPECT_NE(note, std::string::npos) << out;
    EXPECT_EQ(out.find("airlock: pager", note + 1), std::string::npos) << "said once: " << out;
  }
  EXPECT_EQ(written([](int fd) { FdTerminal(fd, "cat >/dev/null").page("paged\n"); }), "")
      << "a working pager gets the text";
  EXPECT_EQ(written([](int fd) { FdTerminal(fd, "cat").page("paged\n"); }), "paged\n")
      << "the pager writes to the terminal";
}

TEST(FdTerminal, ReadsAnswerLinesFromTheTerminal) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_TRUE(writeAll(sv[1], "a\nd\nlast"));
  ::shutdown(sv[1], SHUT_WR);
  FdTerminal term(sv[0], "");
  EXPECT_EQ(term.readLine(), "a");
  EXPECT_EQ(term.readLine(), "d");
  EXPECT_EQ(term.readLine(), "last");
  EXPECT_EQ(term.readLine(), std::nullopt);
  ::close(sv[0]);
  ::close(sv[1]);
}

// A deleted directory kept pending is one whiteout: whiteouts of its
// children as well would make the kept change set unreadable ("entry 'd/a'
// lies below 'd'"), so `review -s` could never resume it (found by an
// adversarial review: `.wh.d` + new.txt reviewed with --review=none).
TEST(Pending, KeptDirectoryDeletionCanBeResumed) {
  Scenario s;
  writeFile(s.ws + "/d/a", "a");
  writeFile(s.ws + "/d/sub/b", "b");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".wh.d", 'f'}, {"new.txt", 'f', "new\n"}})), "");
  auto r = s.diff();
  ASSERT_GE(r.items.size(), 3u) << "the deletion of d and of its children are items";
  auto eng = s.engine();
  std::vector<Decision> dec(r.items.size(), Decision::Rejected);
  std::vector<bool> keep(r.items.size(), true);
  auto dir = keepPending(r.items, dec, keep, *eng, s.session);
  ASSERT_TRUE(dir) << dir.error().message;
  Fd fd(::open((*dir + "/changes.tar").c_str(), O_RDONLY));
  auto back = ChangeSet::fromTar(fd.get(), s.dir.path() + "/restaged");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->changes().at("d").kind, Change::Kind::Whiteout);
  EXPECT_EQ(back->changes().count("d/a"), 0u);
  EXPECT_EQ(back->changes().count("new.txt"), 1u);
}

// Attack (issue 12, item 8): a 60 KB tar of one sparse 16 MiB file and 100
// hard links wrote a 1.6 GiB pending/changes.tar. Kept links are hard link
// entries, kept sparse files sparse entries: the tar stays small, and reads
// back as the same 101 files sharing one sparse staged copy.
TEST(Pending, HardLinkAmplificationKeepsThePendingTarSmall) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(test::makeSparseLinkTar(16 << 20, 100)), "");
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 101u);
  auto eng = s.engine();
  std::vector<Decision> dec(r.items.size(), Decision::Rejected);
  std::vector<bool> keep(r.items.size(), true);
  keep[0] = false;  // "big" itself not kept: the first kept link carries the content
  auto dir = keepPending(r.items, dec, keep, *eng, s.session);
  ASSERT_TRUE(dir) << dir.error().message;
  std::string tar = *dir + "/changes.tar";
  struct stat st {};
  ASSERT_EQ(::stat(tar.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 1 << 20) << "pending tar of " << st.st_size << " bytes";
  EXPECT_LT(test::diskBytes(tar), 1u << 20);
  std::printf("[ measured ] pending tar of 100 links to a sparse 16 MiB file: %lld bytes, %llu on disk\n",
              static_cast<long long>(st.st_size), static_cast<unsigned long long>(test::diskBytes(tar)));
  Fd fd(::open(tar.c_str(), O_RDONLY));
  auto back = ChangeSet::fromTar(fd.get(), s.dir.path() + "/restaged");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->changes().size(), 100u);
  EXPECT_EQ(back->changes().at("link7").sha256, s.changes->changes().at("big").sha256);
  EXPECT_EQ(back->changes().at("link7").size, 16u << 20);
  EXPECT_LT(test::diskBytes(s.dir.path() + "/restaged"), 1u << 20);
}

TEST(Pending, KeptChangesRoundTrip) {
  Scenario s;
  writeFile(s.ws + "/gone", "x");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"new\nname", 'f', "content\n"}, {".wh.gone", 'f'}, {"l", 'l', "", "t", 0777}})), "");
  auto r = s.diff();
  auto eng = s.engine();
  std::vector<Decision> dec(r.items.size(), Decision::Rejected);
  std::vector<bool> keep(r.items.size(), true);
  auto dir = keepPending(r.items, dec, keep, *eng, s.session);
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_NE(test::readAll(*dir + "/changes.patch").find("+content"), std::string::npos);
  EXPECT_NE(test::readAll(*dir + "/decisions").find("rejected new%0Aname"), std::string::npos);
  Fd fd(::open((*dir + "/changes.tar").c_str(), O_RDONLY));
  auto back = ChangeSet::fromTar(fd.get(), s.dir.path() + "/restaged");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->changes().size(), 3u);
  EXPECT_EQ(back->changes().at("gone").kind, Change::Kind::Whiteout);
  EXPECT_EQ(back->changes().at("new\nname").sha256, s.changes->changes().at("new\nname").sha256);
}

}  // namespace
// A session's snapshot copy is removed when it ends; a later review (or
// `airlock diff`) of a file the host changed since has no baseline content.
// The patch is then shown against the host's file as it is now, said so,
// and never called a "large file"; with no host file to stand in either, a
// summary says why.
TEST(DiffReview, AGoneBaselineIsShownAgainstTheHostsFileNow) {
  test::Scenario s;
  test::writeFile(s.ws + "/shared.txt", "original\n");
  test::writeFile(s.ws + "/removed.txt", "original\n");
  s.snapshot();
  std::filesystem::remove_all(s.session + "/snapshot");
  s.snapFd.reset();
  test::writeFile(s.ws + "/shared.txt", "host edit\n");
  ::unlink((s.ws + "/removed.txt").c_str());
  ASSERT_EQ(s.loadTar(test::makeTar({{"shared.txt", 'f', "agent edit\n"}, {"removed.txt", 'f', "agent edit\n"}})),
            "");
  auto d = s.diff();
  ASSERT_EQ(d.items.size(), 2u);
  auto engine = s.engine();
  const DiffItem& removed = d.items[0];
  const DiffItem& shared = d.items[1];
  ASSERT_EQ(shared.path, "shared.txt");
  EXPECT_TRUE(shared.conflict);
  EXPECT_TRUE(shared.comparedWithHost);
  EXPECT_FALSE(shared.tooLarge);
  EXPECT_EQ(shared.linesAdded, 1u);
  EXPECT_EQ(shared.linesRemoved, 1u);
  auto p = engine->patch(shared, false);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NE(p->find("shown against the host's file as it is now"), std::string::npos) << *p;
  EXPECT_NE(p->find("-host edit"), std::string::npos) << *p;
  EXPECT_NE(p->find("+agent edit"), std::string::npos) << *p;
  EXPECT_EQ(p->find("large file"), std::string::npos) << *p;
  ASSERT_EQ(removed.path, "removed.txt");
  EXPECT_TRUE(removed.baseGone);
  auto q = engine->patch(removed, false);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_NE(q->find("the session's copy of the original is gone"), std::string::npos) << *q;
  EXPECT_EQ(q->find("large file"), std::string::npos) << *q;
}

}  // namespace airlock::workspace
