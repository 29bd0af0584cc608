// The session runner without QEMU: a FakeSandbox plays the VM (a canned exit
// code and change set), a RecordingUi the terminal. Each test is a session
// a user has: the review by policy, a conflict with a host edit, a boot that
// fails, the exit-code merge, a pending session resumed later.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/host_context.h"
#include "common/interrupt.h"
#include "fake_sandbox.h"
#include "session/layout.h"
#include "session/review_session.h"
#include "session/runner.h"
#include "test_util.h"

namespace airlock::session {
namespace {

namespace fs = std::filesystem;
namespace ws = airlock::workspace;
using test::FakeScript;
using test::RecordingUi;
using ws::test::makeTar;
using ws::test::readAll;
using ws::test::TarEntry;
using ws::test::writeFile;

class Runner_ : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::canonical(dir_.path()).string();
    workspace_ = root_ + "/project";
    writeFile(workspace_ + "/main.c", "int main() { return 0; }\n");
    writeFile(workspace_ + "/README", "hello\n");
    host_.dirs.state = root_ + "/state";
    host_.dirs.cache = root_ + "/cache";
    host_.uid = ::getuid() == 0 ? 4242 : ::getuid();  // never chown the snapshot in these tests
    host_.umask = 022;
    host_.clock = &clock_;
  }

  /// A plan for a snapshot session reviewed by `mode`, booting a fixed image.
  Plan plan(ws::ReviewMode mode, const std::string& modeName) {
    Plan p;
    p.workspace = workspace_;
    p.workspaceMode = WorkspaceMode::kSnapshot;
    p.image = {ImageSource::Kind::kReference, "example.com/agent:1"};
    p.exec.argv = {"fake-agent", "--go"};
    p.exec.uid = p.exec.gid = 1000;
    p.exec.cwd = "/workspace";
    p.review.mode = mode;
    p.review.modeName = modeName;
    return p;
  }

  Result<RunOutcome> run(Plan p, std::optional<Error> bootError = std::nullopt) {
    Runner runner(std::move(p), {host_, ui_, test::fakeLauncher(script_, bootError, &launched_), images_});
    return runner.run();
  }

  TempDir dir_ = ws::test::scratch();
  std::string root_, workspace_;
  SystemClock clock_;
  HostContext host_;
  FakeScript script_;
  RecordingUi ui_{script_};
  test::FixedImages images_;
  vm::LaunchOptions launched_;
};

// --review=auto: the agent's new file and edit land in the workspace, the
// snapshot is shared read-only as /workspace's lower layer, and the run
// exits 0 with the VM stopped before the review.
TEST_F(Runner_, AutoReviewFlushesTheChangesAndExitsZero) {
  script_.changeSet = makeTar({{"new.c", 'f', "void f() {}\n"}, {"main.c", 'f', "int main() { return 1; }\n"}});
  auto out = run(plan(ws::ReviewMode::Auto, "auto"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 0);
  EXPECT_EQ(readAll(workspace_ + "/new.c"), "void f() {}\n");
  EXPECT_EQ(readAll(workspace_ + "/main.c"), "int main() { return 1; }\n");
  ASSERT_TRUE(out->review);
  EXPECT_EQ(out->review->flushed, 2u);
  EXPECT_EQ(launched_.rootImage, "/fake/root.erofs");
  EXPECT_EQ(launched_.workspaceSnapshot, SessionLayout{out->sessionDir}.snapshot());
  EXPECT_EQ(script_.exports, 1);
  EXPECT_EQ(ui_.stopsAtReview, 1) << "the VM must be stopped before the review";
  EXPECT_EQ(script_.stops, 1);
  // The snapshot is scratch: gone when the session ends; the log stays.
  EXPECT_FALSE(fs::exists(SessionLayout{out->sessionDir}.snapshot()));
  EXPECT_TRUE(fs::exists(SessionLayout{out->sessionDir}.log()));
  ASSERT_EQ(ui_.shown.size(), 1u);
  EXPECT_NE(ui_.shown[0].find("2 flushed"), std::string::npos) << ui_.shown[0];
}

// --review=none: nothing reaches the workspace, everything is kept pending
// (exit 70), and a later review of that session by id flushes it.
TEST_F(Runner_, NoneKeepsEverythingPendingAndALaterReviewFlushesIt) {
  script_.changeSet = makeTar({{"new.c", 'f', "void f() {}\n"}});
  auto out = run(plan(ws::ReviewMode::None, "none"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, exit_code::kReviewPending);
  EXPECT_FALSE(fs::exists(workspace_ + "/new.c"));
  EXPECT_TRUE(fs::exists(SessionLayout{out->sessionDir}.pendingChangeSet()));

  ReviewRequest later;
  later.session = fs::path(out->sessionDir).filename().string();  // by id, from any directory
  later.mode = ws::ReviewMode::Auto;
  later.modeName = "auto";
  auto resumed = reviewSession(host_, later, ui_);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(resumed->workspace, workspace_);
  EXPECT_EQ(resumed->exitCode(), 0);
  EXPECT_EQ(readAll(workspace_ + "/new.c"), "void f() {}\n");
  // Nothing is left: a third review finds nothing pending.
  auto again = reviewSession(host_, later, ui_);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->outcome);
}

// A file the user edited on the host while the agent ran is a conflict: not
// overwritten, exit 71, the other change still lands.
TEST_F(Runner_, HostEditDuringTheRunIsAConflictNeverOverwritten) {
  script_.changeSet = makeTar({{"main.c", 'f', "agent version\n"}, {"new.c", 'f', "new\n"}});
  script_.whileRunning = [&] { writeFile(workspace_ + "/main.c", "user version\n"); };
  auto out = run(plan(ws::ReviewMode::Auto, "auto"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, exit_code::kConflict);
  EXPECT_EQ(readAll(workspace_ + "/main.c"), "user version\n");
  EXPECT_EQ(readAll(workspace_ + "/new.c"), "new\n");
  ASSERT_TRUE(out->review);
  EXPECT_EQ(out->review->conflicts, 1u);
}

// A boot that fails returns its own exit code and leaves no copy of the
// workspace behind.
TEST_F(Runner_, BootFailureLeavesNoSnapshot) {
  auto out = run(plan(ws::ReviewMode::Auto, "auto"), Error{"qemu-system-x86_64 not found", exit_code::kHostNotReady});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, exit_code::kHostNotReady);
  std::vector<fs::path> sessions;
  for (const auto& session : fs::directory_iterator(host_.dirs.state + "/sessions")) sessions.push_back(session.path());
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_TRUE(fs::exists(sessions[0] / "session.log"));
  EXPECT_FALSE(fs::exists(sessions[0] / "snapshot"));
  EXPECT_EQ(script_.execs.size(), 0u);
}

// An image that cannot be had is kImage unless the provider said better.
TEST_F(Runner_, ImageProviderErrorsAreImageFailures) {
  class NoImage final : public ImageProvider {
   public:
    Result<std::string> erofsImage(const ImageSource&) override { return fail("registry said 404"); }
  } noImage;
  Runner runner(plan(ws::ReviewMode::Auto, "auto"), {host_, ui_, test::fakeLauncher(script_), noImage});
  auto out = runner.run();
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, exit_code::kImage);
}

// Ctrl-C while the image is built (mmdebstrap got it too and failed): the
// run ends with 130, not "image failed", and leaves no session, snapshot or
// VM behind; nothing boots.
TEST_F(Runner_, CtrlCBeforeTheAgentStartsLeavesNothing) {
  class InterruptedBuild final : public ImageProvider {
   public:
    Result<std::string> erofsImage(const ImageSource&) override {
      ::raise(SIGINT);
      return failWith(exit_code::kImage, "mmdebstrap failed (exit 130)");
    }
  } interrupted;
  std::string sessionDir;
  {
    Runner runner(plan(ws::ReviewMode::Auto, "auto"),
                  {host_, ui_, test::fakeLauncher(script_, {}, &launched_), interrupted});
    auto out = runner.run();
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().code, 128 + SIGINT);
    EXPECT_NE(out.error().message.find("interrupted (INT) before the agent started"), std::string::npos)
        << out.error().message;
    EXPECT_EQ(interruptSignal(), 0) << "the scope ended with the steps";
    sessionDir = runner.sessionDir();
    ASSERT_FALSE(sessionDir.empty());
  }
  EXPECT_TRUE(launched_.rootImage.empty()) << "nothing booted";
  EXPECT_EQ(script_.execs.size(), 0u);
  EXPECT_FALSE(fs::exists(sessionDir)) << "the session (snapshot, log) is gone";
  EXPECT_TRUE(fs::is_empty(host_.dirs.state + "/sessions"));
}

// A failing agent's changes are not flushed by a policy: exit with the
// agent's code, the changes pending, one line saying why.
TEST_F(Runner_, FailedAgentUnderAutoFlushesNothingAndExitsWithItsCode) {
  script_.agentCode = 3;
  script_.changeSet = makeTar({{"new.c", 'f', "half done\n"}});
  auto out = run(plan(ws::ReviewMode::Auto, "auto"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 3);
  EXPECT_EQ(out->commandCode, 3);
  EXPECT_FALSE(fs::exists(workspace_ + "/new.c"));
  bool said = false;
  for (const auto& line : ui_.lines) said |= line.find("exited with 3, so --review=auto flushes nothing") != std::string::npos;
  EXPECT_TRUE(said);
  ASSERT_EQ(ui_.shown.size(), 1u);
  EXPECT_NE(ui_.shown[0].find("review (none): 0 flushed, 1 pending"), std::string::npos) << ui_.shown[0];
}

// Before any other review the user is told that the agent did not finish
// well (a crash went straight to the review's questions without a word).
TEST_F(Runner_, ACrashedAgentIsSaidBeforeTheReview) {
  script_.agentCode = 128 + SIGSEGV;
  script_.changeSet = makeTar({{"new.c", 'f', "half done\n"}});
  auto out = run(plan(ws::ReviewMode::None, "none"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 139);
  bool said = false;
  for (const auto& line : ui_.lines)
    said |= line.find("warning: ") == 0 && line.find("was killed by SIGSEGV (exit 139)") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(ui_.lines);
}

// An interactive review asks on the UI's terminal, and the terminal is
// prepared (reset, type-ahead dropped) after the diff, right before the
// first question.
TEST_F(Runner_, InteractiveReviewPreparesTheTerminalRightBeforeTheFirstQuestion) {
  test::ScriptedTerminal terminal;
  ui_.terminal = &terminal;
  script_.changeSet = makeTar({{"a.c", 'f', "a\n"}, {"b.c", 'f', "b\n"}});
  auto out = run(plan(ws::ReviewMode::Interactive, "interactive"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 0);
  EXPECT_EQ(terminal.begins, 1);
  EXPECT_EQ(terminal.questions, 2);
  EXPECT_FALSE(terminal.questionBeforeBegin);
  EXPECT_EQ(readAll(workspace_ + "/a.c"), "a\n");
}

// Interactive without a terminal is refused before anything is staged.
TEST_F(Runner_, InteractiveWithoutATerminalIsAUsageError) {
  script_.changeSet = makeTar({{"a.c", 'f', "a\n"}});
  auto out = run(plan(ws::ReviewMode::Interactive, "interactive"));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, exit_code::kUsage);
  EXPECT_FALSE(fs::exists(workspace_ + "/a.c"));
}

// Direct mode: the live workspace shared read-write, no snapshot, no export,
// no review; the exit code is the agent's.
TEST_F(Runner_, DirectModeSharesTheLiveWorkspaceAndSkipsTheReview) {
  script_.agentCode = 4;
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.workspaceMode = WorkspaceMode::kDirect;
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 4);
  EXPECT_EQ(launched_.workspaceDir, workspace_);
  EXPECT_TRUE(launched_.workspaceReadWrite);
  EXPECT_TRUE(launched_.workspaceSnapshot.empty());
  EXPECT_EQ(script_.exports, 0);
  EXPECT_FALSE(out->review);
  EXPECT_FALSE(fs::exists(SessionLayout{out->sessionDir}.snapshot()));
}

// A shared workspace (run-image -w without --review): no session at all.
TEST_F(Runner_, SharedWorkspaceHasNoSession) {
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.workspaceMode = WorkspaceMode::kShared;
  p.image = {ImageSource::Kind::kRootfsDir, root_ + "/rootfs"};
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(out->sessionDir.empty());
  EXPECT_EQ(launched_.workspaceDir, workspace_);
  EXPECT_FALSE(launched_.workspaceReadWrite);
  EXPECT_EQ(launched_.rootImage, "/fake/root.erofs");
  EXPECT_FALSE(fs::exists(host_.dirs.state + "/sessions"));
}

// A lost control channel while the agent runs: exit 66 with the crash
// reason, the sandbox stopped, the blocked-egress report still shown.
TEST_F(Runner_, LostChannelIsAVmFailureWithTheCrashReason) {
  ui_.attachError = Error{"the control channel closed"};
  script_.blocked = {"evil.example (not on the allowlist): 2x"};
  auto out = run(plan(ws::ReviewMode::Auto, "auto"));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, exit_code::kVmFailed);
  EXPECT_NE(out.error().message.find("guest kernel panic"), std::string::npos) << out.error().message;
  EXPECT_EQ(script_.stops, 1);
  EXPECT_EQ(ui_.blocked, script_.blocked);
}

// What the firewall blocked is reported with where the full log is.
TEST_F(Runner_, BlockedEgressIsReportedWithTheSessionLog) {
  script_.blocked = {"evil.example (not on the allowlist): 2x"};
  script_.changeSet = makeTar({});
  auto out = run(plan(ws::ReviewMode::None, "none"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(ui_.blocked, script_.blocked);
  EXPECT_EQ(ui_.blockedDetails, SessionLayout{out->sessionDir}.egressLog());
}

// An export the guest does not finish is a VM failure (66), an oversized one
// is refused as unsafe (74); the sandbox is stopped either way.
TEST_F(Runner_, ExportFailuresStopTheSandbox) {
  script_.exportError = Error{"no export data for 30 s"};
  auto out = run(plan(ws::ReviewMode::Auto, "auto"));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, exit_code::kVmFailed);
  EXPECT_EQ(script_.stops, 1);

  FakeScript second;
  second.exportError = Error{"over 16 GiB", exit_code::kUnsafeChangeSet};
  RecordingUi ui{second};
  Runner runner(plan(ws::ReviewMode::Auto, "auto"), {host_, ui, test::fakeLauncher(second), images_});
  auto refused = runner.run();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, exit_code::kUnsafeChangeSet);
  EXPECT_EQ(second.stops, 1);
}

// An image whose home cannot be given to the agent user is an image problem (67).
TEST_F(Runner_, HomeThatCannotBePreparedIsAnImageFailure) {
  script_.helperCode = 1;
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.chownHome = true;
  auto out = run(std::move(p));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, exit_code::kImage);
  EXPECT_EQ(script_.execs.size(), 1u) << "the agent must not start";
}

/// True when `request` is the runner's state save (`tar -c` in the guest).
bool isStateSave(const protocol::ExecRequest& r) {
  return r.argv.size() > 2 && r.argv[0] == "sh" && r.argv[2].find("tar -c") != std::string::npos;
}

// Issue 16: the agent's state is saved when it exits, as plain data, in the
// (agent, project) directory, and goes back in before the next run starts,
// before the home files (airlock's seeds win).
TEST_F(Runner_, TheAgentsStateIsSavedWhenItExitsAndRestoredNextRun) {
  const std::string stateDir = root_ + "/data/state/agent/0123456789abcdef";
  script_.changeSet = makeTar({{"new.c", 'f', "void f() {}\n"}});
  const std::string saved = makeTar({{".claude", 'd'},
                                     {".claude/projects", 'd'},
                                     {".claude/projects/s.jsonl", 'f', "{\"turn\":1}\n"},
                                     {".claude/sda", 'b'},
                                     {".bashrc", 'f', "not state\n"},
                                     {".claude.json", 'f', "{}"}});
  script_.helperStdout = [saved](const protocol::ExecRequest& r) { return isStateSave(r) ? saved : std::string(); };
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.homeFiles = {{".claude.json", "{\"hasCompletedOnboarding\": true}"}};
  p.state = StatePlan{stateDir, workspace_, {".claude", ".claude.json"}, {}};
  Plan again = p;
  auto first = run(std::move(p));
  ASSERT_TRUE(first) << first.error().message;
  // Saved: the agent's files, not the device, not what is not its state.
  EXPECT_EQ(readAll(stateDir + "/home/.claude/projects/s.jsonl"), "{\"turn\":1}\n");
  EXPECT_FALSE(fs::exists(stateDir + "/home/.claude/sda"));
  EXPECT_FALSE(fs::exists(stateDir + "/home/.bashrc"));
  EXPECT_EQ(readAll(stateDir + "/project"), workspace_ + "\n");
  bool told = false;
  for (const auto& l : ui_.lines) told |= l.find("left out 2") != std::string::npos;
  EXPECT_TRUE(told) << "the dropped entries were not reported";
  // The save ran after the agent, as the agent's uid, naming the spec's paths.
  ASSERT_GE(script_.execs.size(), 3u);
  const auto& save = script_.execs.back();
  ASSERT_TRUE(isStateSave(save));
  EXPECT_EQ(save.uid, 1000u);
  EXPECT_EQ(std::vector<std::string>(save.argv.end() - 2, save.argv.end()),
            (std::vector<std::string>{".claude", ".claude.json"}));
  // Next run: the saved tree goes in by tar before the home file is written.
  FakeScript second;
  second.changeSet = script_.changeSet;
  RecordingUi ui2{second};
  Runner runner(std::move(again), {host_, ui2, test::fakeLauncher(second), images_});
  ASSERT_TRUE(runner.run());
  size_t restore = second.execs.size(), homeFile = second.execs.size();
  for (size_t i = 0; i < second.execs.size(); ++i) {
    const auto& argv = second.execs[i].argv;
    if (argv.size() > 2 && argv[2].find("tar -x") != std::string::npos) restore = i;
    bool writesSeed = argv.size() > 2 && argv[2].find("cat >") != std::string::npos && argv.back().ends_with("/.claude.json");
    if (writesSeed && restore != second.execs.size() && homeFile == second.execs.size()) homeFile = i;
  }
  ASSERT_LT(restore, second.execs.size()) << "nothing restored";
  ASSERT_LT(homeFile, second.execs.size()) << "the home file was not written after the restore";
  EXPECT_NE(second.stdinSeen[restore].find("{\"turn\":1}"), std::string::npos) << "the restore tar lacks the transcript";
  EXPECT_EQ(second.stdinSeen[restore].find("not state"), std::string::npos);
}

// A guest that sends more than the cap: the previous state stays, and the
// user is told.
TEST_F(Runner_, AStateOverItsCapKeepsThePreviousOne) {
  const std::string stateDir = root_ + "/data/state/agent/0123456789abcdef";
  writeFile(stateDir + "/home/.claude/old.jsonl", "previous\n");
  script_.changeSet = makeTar({{"new.c", 'f', "void f() {}\n"}});
  const std::string big = makeTar({{".claude", 'd'}, {".claude/big", 'f', std::string(300000, 'x')}});
  script_.helperStdout = [big](const protocol::ExecRequest& r) { return isStateSave(r) ? big : std::string(); };
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.state = StatePlan{stateDir, workspace_, {".claude"}, {}};
  p.state->limits.maxBytes = 100000;
  p.state->limits.maxEntries = 10;
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(readAll(stateDir + "/home/.claude/old.jsonl"), "previous\n");
  EXPECT_FALSE(fs::exists(stateDir + "/home/.claude/big"));
  bool told = false;
  for (const auto& l : ui_.lines) told |= l.find("not saved") != std::string::npos && l.find("cap") != std::string::npos;
  EXPECT_TRUE(told);
  // The guest goes on sending after the runner gave up: nothing is written
  // anywhere, and nothing of the finished save is touched (ASan in
  // scripts/sanitize catches a handler that outlived its frame).
  ASSERT_TRUE(script_.lastHelperHandlers.onStdout);
  script_.lastHelperHandlers.onStdout(std::string(70000, 'y'));
  EXPECT_FALSE(fs::exists(stateDir + "/save.tar"));
  EXPECT_EQ(readAll(stateDir + "/home/.claude/old.jsonl"), "previous\n");
}

// The guest's tar fails (an image without it, a broken run): whatever it
// sent is not a state, and the previous one stays.
TEST_F(Runner_, AFailedGuestTarKeepsThePreviousState) {
  const std::string stateDir = root_ + "/data/state/agent/0123456789abcdef";
  writeFile(stateDir + "/home/.claude/old.jsonl", "previous\n");
  script_.changeSet = makeTar({{"new.c", 'f', "void f() {}\n"}});
  const std::string partial = makeTar({{".claude", 'd'}});
  script_.helperStdout = [partial](const protocol::ExecRequest& r) { return isStateSave(r) ? partial : std::string(); };
  script_.helperExit = [](const protocol::ExecRequest& r) { return isStateSave(r) ? 2 : 0; };
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.state = StatePlan{stateDir, workspace_, {".claude"}, {}};
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(readAll(stateDir + "/home/.claude/old.jsonl"), "previous\n");
  bool told = false;
  for (const auto& l : ui_.lines) told |= l.find("tar exited with 2") != std::string::npos;
  EXPECT_TRUE(told);
}

// A saved state with a directory where a home file goes (.claude.json):
// the run starts without the state instead of failing at every boot.
TEST_F(Runner_, AStateInTheWayOfAHomeFileIsSetAsideNotFatal) {
  const std::string stateDir = root_ + "/data/state/agent/0123456789abcdef";
  ASSERT_TRUE(makeDirs(stateDir + "/home/.claude.json"));
  script_.changeSet = makeTar({{"new.c", 'f', "void f() {}\n"}});
  bool wiped = false;
  script_.helperExit = [&wiped](const protocol::ExecRequest& r) {
    if (r.argv.size() > 2 && r.argv[2].find("rm -rf") != std::string::npos) wiped = true;
    bool homeFile = r.argv.size() > 2 && r.argv[2].find("cat >") != std::string::npos;
    return homeFile && !wiped ? 1 : 0;
  };
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.homeFiles = {{".claude.json", "{}"}};
  p.state = StatePlan{stateDir, workspace_, {".claude", ".claude.json"}, {}};
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(wiped);
  bool told = false;
  for (const auto& l : ui_.lines) told |= l.find("unusable") != std::string::npos;
  EXPECT_TRUE(told);
}

// Issue 16: the user's settings go in after the saved state (replacing
// whatever the state holds at those paths), then the seed files, which do
// not replace what the state has, then airlock's home files; the settings
// and the agent's credentials are never saved with the state.
TEST_F(Runner_, TheUsersSettingsGoInAfterTheStateAndAreNotSaved) {
  const std::string stateDir = root_ + "/data/state/agent/0123456789abcdef";
  writeFile(stateDir + "/home/.claude/projects/s.jsonl", "{}\n");
  script_.changeSet = makeTar({{"new.c", 'f', "void f() {}\n"}});
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  // A guest whose tar ignores the excludes: the host leaves them out again.
  const std::string saved = makeTar({{".claude", 'd'},
                                     {".claude/.credentials.json", 'f', "{\"accessToken\": \"sk-ant-x\"}"},
                                     {".claude/CLAUDE.md", 'f', "Be brief.\n"},
                                     {".claude/history.jsonl", 'f', "{}\n"}});
  script_.helperStdout = [saved](const protocol::ExecRequest& r) { return isStateSave(r) ? saved : std::string(); };
  p.state = StatePlan{stateDir, workspace_, {".claude", ".claude.json"}, {}, {".claude/.credentials.json"}};
  p.settings = SettingsPlan{{".claude/CLAUDE.md", ".claude/skills"},
                            {{".claude", true, "", false}, {".claude/CLAUDE.md", false, "Be brief.\n", false}}};
  p.seedFiles = {{".claude.json", "{\"hasCompletedOnboarding\": true}"}};
  p.homeFiles = {{".config/agent/settings.json", "{}"}};
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  auto find = [&](const std::function<bool(const protocol::ExecRequest&)>& is) {
    for (size_t i = 0; i < script_.execs.size(); ++i)
      if (is(script_.execs[i])) return i;
    return script_.execs.size();
  };
  auto script = [](const protocol::ExecRequest& r) { return r.argv.size() > 2 ? r.argv[2] : std::string(); };
  size_t restore = find([&](const auto& r) { return script(r) == "cd \"$HOME\" && exec tar -x -f -"; });
  size_t settings = find([&](const auto& r) { return script(r).find("rm -rf") != std::string::npos &&
                                                     script(r).find("tar -x") != std::string::npos; });
  size_t seed = find([&](const auto& r) { return script(r).find("[ -e") != std::string::npos; });
  size_t home = find([&](const auto& r) { return !r.argv.empty() && r.argv.back().ends_with("/settings.json"); });
  size_t agent = find([](const auto& r) { return !r.argv.empty() && r.argv[0] == "fake-agent"; });
  ASSERT_LT(agent, script_.execs.size());
  EXPECT_LT(restore, settings);
  EXPECT_LT(settings, seed);
  EXPECT_LT(seed, home);
  EXPECT_LT(home, agent);
  // The settings replace what the state has at their paths, as the agent.
  const auto& s = script_.execs[settings];
  EXPECT_EQ(s.uid, 1000u);
  EXPECT_EQ(std::vector<std::string>(s.argv.end() - 2, s.argv.end()),
            (std::vector<std::string>{".claude/CLAUDE.md", ".claude/skills"}));
  EXPECT_NE(script_.stdinSeen[settings].find("Be brief."), std::string::npos);
  EXPECT_EQ(script_.execs[seed].argv.back(), "/home/agent/.claude.json");
  // The save leaves them out.
  const auto& save = script_.execs.back();
  ASSERT_TRUE(isStateSave(save));
  std::vector<std::string> args(save.argv.begin() + 4, save.argv.end());
  EXPECT_EQ(args, (std::vector<std::string>{"--exclude=.claude/.credentials.json", "--exclude=.claude/CLAUDE.md",
                                            "--exclude=.claude/skills", "--", ".claude", ".claude.json"}));
  EXPECT_NE(script(save).find("--anchored --no-wildcards"), std::string::npos);
  EXPECT_TRUE(fs::exists(stateDir + "/home/.claude/history.jsonl"));
  EXPECT_FALSE(fs::exists(stateDir + "/home/.claude/.credentials.json"));
  EXPECT_FALSE(fs::exists(stateDir + "/home/.claude/CLAUDE.md"));
}

// Steps called out of order fail instead of touching what does not exist.
TEST_F(Runner_, StepsOutOfOrderFail) {
  Runner runner(plan(ws::ReviewMode::Auto, "auto"), {host_, ui_, test::fakeLauncher(script_), images_});
  EXPECT_EQ(runner.boot().error().code, exit_code::kInternal);
  EXPECT_EQ(runner.runCommand().error().code, exit_code::kInternal);
  EXPECT_EQ(runner.exportChanges().error().code, exit_code::kInternal);
  EXPECT_EQ(runner.review().error().code, exit_code::kInternal);
}

// A detached session's end: an empty change set needs no review (recorded
// as reviewed); changes wait for `airlock review NAME`, nothing flushed.
TEST_F(Runner_, KeepForReviewRecordsAnEmptyChangeSetAsReviewed) {
  for (bool empty : {true, false}) {
    script_.changeSet = empty ? makeTar({}) : makeTar({{"new.c", 'f', "later\n"}});
    Runner runner(plan(ws::ReviewMode::Auto, "auto"), {host_, ui_, test::fakeLauncher(script_), images_});
    ASSERT_TRUE(runner.open());
    ASSERT_TRUE(runner.boot());
    ASSERT_TRUE(runner.runCommand());
    auto waits = runner.keepForReview();
    ASSERT_TRUE(waits) << waits.error().message;
    EXPECT_EQ(*waits, !empty);
    SessionLayout layout{runner.sessionDir()};
    EXPECT_EQ(fs::exists(layout.reviewed()), empty);
    EXPECT_TRUE(fs::exists(layout.changeSet()));
    EXPECT_FALSE(fs::exists(workspace_ + "/new.c"));
    EXPECT_NE(readAll(layout.log()).find(empty ? "changed nothing" : "wait for `airlock review"), std::string::npos);
  }
}

// --accept-failed flushes a failing agent's changes; the exit code is still the agent's.
TEST_F(Runner_, AcceptFailedFlushesAndKeepsTheAgentsCode) {
  script_.agentCode = 2;
  script_.changeSet = makeTar({{"new.c", 'f', "done anyway\n"}});
  Plan p = plan(ws::ReviewMode::Auto, "auto");
  p.review.acceptFailed = true;
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 2);
  EXPECT_EQ(readAll(workspace_ + "/new.c"), "done anyway\n");
}

// A session the user forced to end exports with the short deadline.
TEST_F(Runner_, ForcedEndExportsWithTheShortLimits) {
  ui_.forceEnd = true;
  script_.agentCode = 128 + 15;
  script_.changeSet = makeTar({});
  auto out = run(plan(ws::ReviewMode::None, "none"));
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(script_.forcedLimits);
  EXPECT_TRUE(out->forced);
}

// A hostile change set (a path escaping the workspace) is refused whole: exit 74, nothing flushed.
TEST_F(Runner_, UnsafeChangeSetIsRefusedWhole) {
  script_.changeSet = makeTar({{"ok.c", 'f', "fine\n"}, {"../escape", 'f', "owned\n"}});
  auto out = run(plan(ws::ReviewMode::Auto, "auto"));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, exit_code::kUnsafeChangeSet);
  EXPECT_FALSE(fs::exists(workspace_ + "/ok.c"));
  EXPECT_FALSE(fs::exists(root_ + "/escape"));
}

// Home files are written as the agent user before the agent starts, after
// the home is given to it (an image not built for the agent).
TEST_F(Runner_, HomeIsPreparedBeforeTheAgentStarts) {
  script_.changeSet = makeTar({});
  Plan p = plan(ws::ReviewMode::None, "none");
  p.chownHome = true;
  p.homeFiles = {{".config/agent/settings.json", "{\"theme\":\"dark\"}"}};
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(script_.execs.size(), 3u);
  EXPECT_EQ(script_.execs[0].uid, 0u);  // chown of the home, as root
  EXPECT_EQ(script_.execs[1].uid, 1000u);
  EXPECT_EQ(script_.execs[1].argv.back(), "/home/agent/.config/agent/settings.json");
  EXPECT_EQ(script_.stdinSeen[1], "{\"theme\":\"dark\"}");
  EXPECT_EQ(script_.execs[2].argv[0], "fake-agent");
}

/// True when `request` reads the delivered credential back (`cat --` in the guest).
bool isCredentialReadBack(const protocol::ExecRequest& r) {
  return r.argv.size() > 2 && r.argv[0] == "sh" && r.argv[2].find("cat --") != std::string::npos;
}

// Issue 15, item 4: a login that enters the VM goes on the /run tmpfs (a
// directory made the agent's by root), is linked from $HOME after the home
// files, is read back when the agent exits, and is never saved with the state.
TEST_F(Runner_, ADeliveredLoginGoesOnTheTmpfsAndIsReadBackAfterTheAgent) {
  script_.changeSet = makeTar({});
  const std::string stateDir = root_ + "/data/state/agent/0123456789abcdef";
  script_.helperStdout = [](const protocol::ExecRequest& r) {
    if (isCredentialReadBack(r)) return std::string("{\"refreshed\":true}");
    return isStateSave(r) ? makeTar({{".local", 'd'}}) : std::string();
  };
  std::vector<std::string> returned;
  Plan p = plan(ws::ReviewMode::None, "none");
  p.homeFiles = {{".config/agent/settings.json", "{}"}};
  p.state = StatePlan{stateDir, workspace_, {".local/share/agent"}, {}};
  p.credential = DeliveredCredential{".local/share/agent/auth.json", "{\"real\":\"TOKEN\"}", 1024,
                                     [&](std::string_view content, std::string_view) -> Result<bool> {
                                       returned.emplace_back(content);
                                       return true;
                                     },
                                     "kept it"};
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  size_t dir = 0, file = 0, agent = 0, readBack = 0, save = 0, home = 0;
  for (size_t i = 0; i < script_.execs.size(); ++i) {
    const auto& r = script_.execs[i];
    const std::string script = r.argv.size() > 2 ? r.argv[2] : "";
    if (r.argv[0] == "fake-agent") agent = i;
    if (script.find("chmod 0700") != std::string::npos) dir = i;
    if (script.find("ln -s") != std::string::npos) file = i;
    if (isCredentialReadBack(r)) readBack = i;
    if (isStateSave(r)) save = i;
    if (!r.argv.empty() && r.argv.back() == "/home/agent/.config/agent/settings.json") home = i;
  }
  // The directory: root's doing, the agent's to own.
  ASSERT_GT(dir, 0u);
  EXPECT_EQ(script_.execs[dir].uid, 0u);
  EXPECT_EQ(script_.execs[dir].argv[4], "/run/airlock/credentials");
  EXPECT_EQ(script_.execs[dir].argv[5], "1000");
  // The file: on the tmpfs as the agent, umask 077, content on stdin (never argv), linked from $HOME.
  ASSERT_GT(file, dir);
  EXPECT_GT(file, home) << "a home file was written after the credential";
  EXPECT_EQ(script_.execs[file].uid, 1000u);
  EXPECT_NE(script_.execs[file].argv[2].find("umask 077"), std::string::npos);
  EXPECT_EQ(script_.execs[file].argv[4], "/run/airlock/credentials/auth.json");
  EXPECT_EQ(script_.execs[file].argv[5], "/home/agent/.local/share/agent/auth.json");
  EXPECT_EQ(script_.stdinSeen[file], "{\"real\":\"TOKEN\"}");
  for (const auto& r : script_.execs)
    for (const auto& a : r.argv) EXPECT_EQ(a.find("TOKEN"), std::string::npos) << a;
  // Read back after the agent, through the link, and handed over.
  ASSERT_GT(agent, file);
  ASSERT_GT(readBack, agent);
  EXPECT_EQ(script_.execs[readBack].argv.back(), "/home/agent/.local/share/agent/auth.json");
  EXPECT_EQ(returned, std::vector<std::string>{"{\"refreshed\":true}"});
  bool told = false;
  for (const auto& l : ui_.lines) told |= l == "notice: kept it";
  EXPECT_TRUE(told);
  // The state's tar leaves it out.
  ASSERT_GT(save, 0u);
  const auto& argv = script_.execs[save].argv;
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--exclude=.local/share/agent/auth.json"), argv.end());
}

// extra_ca_certs: the image's bundle and the user's certificates, written
// as the agent before the command starts (the certificates on stdin).
TEST_F(Runner_, TheExtraCaCertificatesJoinTheImagesBundleBeforeTheAgentStarts) {
  script_.changeSet = makeTar({});
  Plan p = plan(ws::ReviewMode::None, "none");
  p.extraCaCertificates = "-----BEGIN CERTIFICATE-----\nCORP\n-----END CERTIFICATE-----\n";
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(script_.execs.size(), 2u);
  const auto& write = script_.execs[0];
  EXPECT_EQ(write.uid, 1000u);
  EXPECT_EQ(write.argv[4], "/home/agent/.airlock/ca-bundle.pem");
  EXPECT_EQ(write.argv[5], "/etc/ssl/certs/ca-certificates.crt");
  EXPECT_NE(write.argv[2].find("cat \"$2\""), std::string::npos);
  EXPECT_EQ(script_.stdinSeen[0], "-----BEGIN CERTIFICATE-----\nCORP\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(script_.execs[1].argv[0], "fake-agent");
}

// A login VM: the home goes on a tmpfs (as root, first of all), and a
// credential that was not delivered is only read back.
TEST_F(Runner_, ALoginVmKeepsTheHomeOnATmpfsAndReadsTheLoginBack) {
  script_.changeSet = makeTar({});
  script_.helperStdout = [](const protocol::ExecRequest& r) {
    if (!isCredentialReadBack(r)) return std::string();
    return r.argv.back() == "/home/agent/.demo.json" ? std::string("{\"who\":\"me\"}")
                                                      : std::string("{\"made\":\"in the VM\"}");
  };
  std::string got, account;
  Plan p = plan(ws::ReviewMode::None, "none");
  p.workspaceMode = WorkspaceMode::kNone;
  p.homeOnTmpfs = true;
  p.homeFiles = {{".demo/config.toml", "x"}};
  p.credential = DeliveredCredential{".demo/auth.json", std::nullopt, 1024,
                                     [&](std::string_view content, std::string_view who) -> Result<bool> {
                                       got = std::string(content);
                                       account = std::string(who);
                                       return false;
                                     },
                                     "", ".demo.json"};
  auto out = run(std::move(p));
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_GE(script_.execs.size(), 4u);
  const auto& mount = script_.execs[0];
  EXPECT_EQ(mount.uid, 0u);
  EXPECT_NE(mount.argv[2].find("mount -t tmpfs"), std::string::npos);
  EXPECT_NE(mount.argv[2].find("mount --move"), std::string::npos);
  EXPECT_EQ(mount.argv.back(), "/home/agent");
  for (const auto& r : script_.execs)
    if (r.argv.size() > 2) {
      EXPECT_EQ(r.argv[2].find("ln -s"), std::string::npos) << "a credential was delivered";
    }
  EXPECT_EQ(got, "{\"made\":\"in the VM\"}");
  EXPECT_EQ(account, "{\"who\":\"me\"}") << "the account file was not read back with it";
}

// The account file is best effort: missing or over the cap, the login
// is still handed over, with no account.
TEST_F(Runner_, AMissingOrOversizedAccountFileStillHandsTheLoginOver) {
  for (bool oversized : {true, false}) {
    FakeScript script;
    script.changeSet = makeTar({});
    auto isAccount = [](const protocol::ExecRequest& r) {
      return isCredentialReadBack(r) && r.argv.back() == "/home/agent/.demo.json";
    };
    script.helperStdout = [oversized, isAccount](const protocol::ExecRequest& r) {
      if (isAccount(r)) return oversized ? std::string(4096, 'x') : std::string();
      return isCredentialReadBack(r) ? std::string("{\"made\":1}") : std::string();
    };
    script.helperExit = [oversized, isAccount](const protocol::ExecRequest& r) { return isAccount(r) && !oversized ? 1 : 0; };
    RecordingUi ui{script};
    std::optional<std::string> account;
    Plan p = plan(ws::ReviewMode::None, "none");
    p.credential = DeliveredCredential{".demo/auth.json", std::nullopt, 1024,
                                       [&](std::string_view, std::string_view who) -> Result<bool> {
                                         account = std::string(who);
                                         return false;
                                       },
                                       "", ".demo.json"};
    Runner runner(std::move(p), {host_, ui, test::fakeLauncher(script), images_});
    auto out = runner.run();
    ASSERT_TRUE(out) << out.error().message;
    ASSERT_TRUE(account) << oversized;
    EXPECT_EQ(*account, "") << oversized;
  }
}

// A guest answering more than the cap, or failing, keeps the stored login:
// nothing is handed over, and the user is told.
TEST_F(Runner_, AnOversizedOrMissingReadBackKeepsTheStoredLogin) {
  for (bool oversized : {true, false}) {
    FakeScript script;
    script.changeSet = makeTar({});
    script.helperStdout = [oversized](const protocol::ExecRequest& r) {
      return isCredentialReadBack(r) && oversized ? std::string(4096, 'x') : std::string();
    };
    script.helperExit = [oversized](const protocol::ExecRequest& r) { return isCredentialReadBack(r) && !oversized ? 1 : 0; };
    RecordingUi ui{script};
    int calls = 0;
    Plan p = plan(ws::ReviewMode::None, "none");
    p.credential = DeliveredCredential{".local/share/agent/auth.json", "{}", 1024, [&](std::string_view, std::string_view) -> Result<bool> {
                                         ++calls;
                                         return true;
                                       }};
    Runner runner(std::move(p), {host_, ui, test::fakeLauncher(script), images_});
    auto out = runner.run();
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(calls, 0) << oversized;
    bool warned = false;
    for (const auto& l : ui.lines)
      warned |= l.find("warning: the login file in the VM was not kept") != std::string::npos &&
                l.find(oversized ? "over 1 KiB" : "no such file") != std::string::npos;
    EXPECT_TRUE(warned) << oversized;
  }
}

// A login's caller that tells the user itself gets the reason, and no
// warning says it a second time.
TEST_F(Runner_, AnUnreadableLoginFileGoesToItsCallerAlone) {
  FakeScript script;
  script.changeSet = makeTar({});
  script.helperExit = [](const protocol::ExecRequest& r) { return isCredentialReadBack(r) ? 1 : 0; };
  RecordingUi ui{script};
  Plan p = plan(ws::ReviewMode::None, "none");
  p.credential = DeliveredCredential{".local/share/agent/auth.json", std::nullopt, 1024,
                                     [](std::string_view, std::string_view) -> Result<bool> { return true; }};
  std::string why;
  p.credential->unreadable = [&why](const Error& e) { why = e.message; };
  Runner runner(std::move(p), {host_, ui, test::fakeLauncher(script), images_});
  auto out = runner.run();
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_NE(why.find("no such file"), std::string::npos) << why;
  for (const auto& l : ui.lines) EXPECT_EQ(l.find("was not kept"), std::string::npos) << l;
}

// The exit-code rule in one table: airlock's own failure first, then the
// command's non-zero code, then the review's pending/conflict code.
TEST(ExitCodes, MergeRule) {
  using namespace exit_code;
  EXPECT_EQ(mergeExitCodes(0, 0), 0);
  EXPECT_EQ(mergeExitCodes(0, kReviewPending), kReviewPending);
  EXPECT_EQ(mergeExitCodes(0, kConflict), kConflict);
  EXPECT_EQ(mergeExitCodes(5, kReviewPending), 5);
  EXPECT_EQ(mergeExitCodes(5, kConflict), 5);
  EXPECT_EQ(mergeExitCodes(5, kUnsafeChangeSet), kUnsafeChangeSet);
  EXPECT_EQ(mergeExitCodes(0, kUnsafeChangeSet), kUnsafeChangeSet);
  EXPECT_EQ(mergeExitCodes(137, 0), 137);
}

}  // namespace
}  // namespace airlock::session
