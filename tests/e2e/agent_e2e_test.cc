// End to end: `airlock run <agent>` with the real agent CLI in a real microVM,
// talking to the project's scripted mock model server on the host's loopback
// (mapped with --host-port to the guest's gateway 10.0.2.2; the egress
// firewall lets nothing else of the host through). Each test
// asserts what a user relies on: exactly the agent's changes land after
// review, nothing else changes, secrets never enter the VM, and a file the
// user edited during the session is never overwritten.
//
// airlock runs as a user, without sudo (issue 14): started by root (CI),
// the tests run it as an unprivileged test user who owns the project, with
// the agent image root built seeded into the user's cache; started by a
// user, as that user. One test keeps the path of airlock started by root.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "../support/listening_process.h"
#include "../vm/airlock_process.h"

namespace airlock::test {
namespace {

namespace fs = std::filesystem;

void writeFile(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

/// The project's mock model server (tests/e2e/mock_model_server.py) on 127.0.0.1.
class MockModel {
 public:
  MockModel(const std::string& scenario, const std::string& dir)
      : log_(dir + "/mock.log"), gate_(dir + "/gate"), dump_(dir + "/requests") {
    fs::create_directories(gate_);
    std::string out = dir + "/mock.out";
    pid_ = fork();
    if (pid_ == 0) {
      std::freopen(out.c_str(), "w", stdout);
      std::freopen((dir + "/mock.err").c_str(), "w", stderr);
      std::string script = std::string(AIRLOCK_SOURCE_DIR) + "/tests/e2e/mock_model_server.py";
      std::string scenarioPath = std::string(AIRLOCK_SOURCE_DIR) + "/tests/e2e/scenarios/" + scenario;
      execl("/usr/bin/python3", "python3", script.c_str(), "--port", "0", "--scenario", scenarioPath.c_str(), "--log",
            log_.c_str(), "--gate-dir", gate_.c_str(), "--dump-dir", dump_.c_str(), "--exit-after", "1200", "--quiet",
            nullptr);
      _exit(127);
    }
    for (int i = 0; i < 100 && port_ == 0; ++i) {
      std::string text = slurp(out);
      if (auto at = text.find("PORT "); at != std::string::npos) port_ = std::atoi(text.c_str() + at + 5);
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~MockModel() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  /// Base URL as the guest sees it.
  std::string guestUrl() const { return "http://10.0.2.2:" + std::to_string(port_); }
  int port() const { return port_; }
  std::string log() const { return slurp(log_); }
  const std::string& gateDir() const { return gate_; }
  /// Every request body the mock got, concatenated.
  std::string requests() const {
    std::string out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dump_, ec)) out += slurp(e.path().string());
    return out;
  }
  /// True when the log shows the agent received every scripted step and no
  /// expectation on a tool result was violated.
  bool completed() const {
    std::string l = log();
    return l.find("\"violations\": [{") == std::string::npos && l.find("\"step\": ") != std::string::npos;
  }

 private:
  std::string log_, gate_, dump_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class AgentE2E : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    project_ = dir_ + "/project";
    state_ = dir_ + "/state";
    // A small real project: this repository's own src/common, plus the files
    // the scenarios touch and a secret.
    fs::create_directories(project_ + "/src");
    fs::copy(std::string(AIRLOCK_SOURCE_DIR) + "/src/common", project_ + "/src/common", fs::copy_options::recursive);
    writeFile(project_ + "/README.md", "# Sample project\n");
    writeFile(project_ + "/old.txt", "to be deleted\n");
    writeFile(project_ + "/.env", "API_TOKEN=do-not-leak\n");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  /// Started by root: builds `agent`'s image as root (a no-op when cached),
  /// makes the unprivileged test user with that image in its cache, and
  /// gives it the test's directory. Later runs go through that user.
  /// `env`: for `image build` (XDG_CONFIG_HOME of a config with MCP servers).
  void runAsTestUser(const std::string& agent, const std::map<std::string, std::string>& env = {}) {
    if (geteuid() != 0) return;
    auto built = runAirlock({"image", "build", "-q", agent}, "", env, 1500);
    ASSERT_EQ(built.exitCode, 0) << built.err;
    std::string image = built.out.substr(0, built.out.find('\n'));
    user_.emplace(defaultCacheDir(), std::vector<std::string>{image});
    ASSERT_EQ(user_->error(), "");
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      ASSERT_EQ(lchown(e.path().c_str(), TestUser::kUid, TestUser::kUid), 0) << e.path();
    ASSERT_EQ(lchown(dir_.c_str(), TestUser::kUid, TestUser::kUid), 0);
    tun_.emplace(0666);
  }
  /// Paths in the project not owned by the user who ran airlock.
  std::vector<std::string> foreignOwned() const {
    const uid_t owner = user_ ? TestUser::kUid : geteuid();
    std::vector<std::string> out;
    struct stat st {};
    for (const auto& e : fs::recursive_directory_iterator(project_))
      if (lstat(e.path().c_str(), &st) == 0 && (st.st_uid != owner || st.st_gid != owner))
        out.push_back(fs::relative(e.path(), project_).string() + " " + std::to_string(st.st_uid) + ":" +
                      std::to_string(st.st_gid));
    return out;
  }
  /// Snapshot of every file of the project: path -> content.
  std::map<std::string, std::string> files() const {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(project_))
      if (e.is_regular_file()) out[fs::relative(e.path(), project_).string()] = slurp(e.path().string());
    return out;
  }
  /// `home`: the $HOME airlock gets (its user's agent settings), instead of the invoker's.
  /// `extraEnv`: more variables for airlock.
  ProcessResult run(const std::string& agent, const MockModel& mock, const std::vector<std::string>& flags,
                    const std::vector<std::string>& agentArgs, const std::string& home = "",
                    const std::map<std::string, std::string>& extraEnv = {}) {
    std::vector<std::string> args = {"run", agent, "-q", "-w", project_, "--host-port", std::to_string(mock.port())};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), agentArgs.begin(), agentArgs.end());
    std::map<std::string, std::string> env = {{"XDG_STATE_HOME", state_},
                                              {"XDG_CONFIG_HOME", dir_ + "/config"},
                                              {"XDG_DATA_HOME", dir_ + "/data"},
                                              {"ANTHROPIC_BASE_URL", mock.guestUrl()},
                                              {"ANTHROPIC_API_KEY", "airlock-e2e"},
                                              {"OPENAI_BASE_URL", mock.guestUrl() + "/v1"},
                                              {"OPENAI_API_KEY", "airlock-e2e"},
                                              {"GOOGLE_GEMINI_BASE_URL", mock.guestUrl()},
                                              {"GEMINI_API_KEY", "airlock-e2e"},
                                              {"GROK_BASE_URL", mock.guestUrl() + "/v1"},
                                              {"GROK_API_KEY", "airlock-e2e"},
                                              // Copilot with the mock as its own provider (BYOK), GitHub left alone.
                                              {"COPILOT_PROVIDER_BASE_URL", mock.guestUrl() + "/v1"},
                                              {"COPILOT_PROVIDER_API_KEY", "airlock-e2e"},
                                              {"COPILOT_OFFLINE", "true"},
                                              {"COPILOT_MODEL", "gpt-4.1"}};
    for (const auto& [k, v] : extraEnv) env[k] = v;
    if (!home.empty()) {
      env["HOME"] = home;
      if (!user_) env["AIRLOCK_CACHE_DIR"] = defaultCacheDir();  // the invoker's images, not a new cache under `home`
    }
    return runAirlock(args, "", env, 1500, user_ ? &*user_ : nullptr);
  }
  std::vector<std::string> claudeArgs() const { return {"-p", "Do the scripted task.", "--output-format", "json"}; }
  /// Claude Code on the single_edit scenario with `flags`: it exits 0, its
  /// one new file is the only change to the project, and every file is the
  /// owner's.
  void expectTheSingleEditLands(const std::vector<std::string>& flags) {
    MockModel mock("single_edit.json", dir_);
    auto before = files();
    auto r = run("claude-code", mock, flags, claudeArgs());
    ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
    // stdout is the agent's alone (`-p --output-format json | jq` works);
    // the review's summary goes to stderr.
    EXPECT_EQ(r.out.find("flushed"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.rfind("{", 0), 0u) << r.out;
    const bool reviewed =
        std::any_of(flags.begin(), flags.end(), [](const std::string& f) { return f.starts_with("--review"); });
    if (reviewed) {
      EXPECT_NE(r.err.find("flushed 1 change(s)"), std::string::npos) << r.err;
    }
    auto after = files();
    EXPECT_EQ(after["AGENT_NOTE.md"], "Edited by the agent under airlock.\n") << mock.log();
    after.erase("AGENT_NOTE.md");
    EXPECT_EQ(after, before);
    EXPECT_EQ(foreignOwned(), std::vector<std::string>{});
  }
  std::string dir_, project_, state_;
  std::optional<TestUser> user_;
  std::optional<TunMode> tun_;
};

TEST_F(AgentE2E, ClaudeCodeChangesLandAfterAutoReview) {
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  MockModel mock("edit_project.json", dir_);
  ASSERT_NE(mock.port(), 0);
  auto before = files();
  auto r = run("claude-code", mock, {"--review=auto"}, claudeArgs());
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
  auto after = files();
  EXPECT_EQ(after["NEW.md"], "# New file\n\nWritten by the airlock mock model.\n");
  EXPECT_EQ(after["README.md"], "# Sample project\nAppended by the agent.\n");
  EXPECT_EQ(after.count("old.txt"), 0u) << "the deletion did not land";
  // Nothing else changed.
  after.erase("NEW.md");
  after.erase("README.md");
  before.erase("README.md");
  before.erase("old.txt");
  EXPECT_EQ(after, before);
  // The agent's `ls -la` in /workspace did not show .env (checked by the mock).
  EXPECT_TRUE(mock.completed()) << mock.log();
  EXPECT_NE(mock.log().find("ls -la"), std::string::npos);
  // The new file and the edited one are the user's, like everything else.
  EXPECT_EQ(foreignOwned(), std::vector<std::string>{});
  // airlock itself ran as that user: its state is the user's.
  struct stat st {};
  ASSERT_EQ(stat((state_ + "/airlock").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user_ ? TestUser::kUid : geteuid());
}

// airlock started by root keeps working: the changes land owned by the
// project's owner (root here), not by the guest's uid.
TEST_F(AgentE2E, ClaudeCodeChangesLandWhenRootRunsAirlock) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: this is the path of airlock started by root";
  expectTheSingleEditLands({"--review=auto"});
}

// Direct mode as a user (with a supplementary group, as a login has): the
// agent writes the live files through virtiofsd, which runs in a user
// namespace and must first drop the groups (newgidmap maps one of the
// user's subordinate gids for that). The files are the user's.
TEST_F(AgentE2E, ClaudeCodeDirectModeAsAUserWritesTheUsersFiles) {
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  expectTheSingleEditLands({"--workspace-mode", "direct", "--yes"});
}

/// The first line of a mock log where the agent was asked for a step ("" when none).
std::string firstAgentTurn(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("\"kind\": \"agent\"") != std::string::npos) return line;
  return "";
}

// Issue 16: Claude Code's conversation is saved with the project's state
// when it exits; `--continue` on the same project sends the earlier turn
// (the mock sees its tool result and goes on to the next step), and on
// another project finds nothing of it.
TEST_F(AgentE2E, ClaudeCodeContinuesItsConversationOnTheSameProjectOnly) {
  const std::string projectB = dir_ + "/project-b";
  fs::create_directories(projectB);
  writeFile(projectB + "/README.md", "# Project B\n");
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  const std::string projectA = project_;
  {
    fs::create_directories(dir_ + "/m1");
    MockModel mock("single_edit.json", dir_ + "/m1");
    auto r = run("claude-code", mock, {"--review=auto"}, claudeArgs());
    ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
    ASSERT_EQ(files()["AGENT_NOTE.md"], "Edited by the agent under airlock.\n");
  }
  {
    fs::create_directories(dir_ + "/m2");
    MockModel mock("single_edit.json", dir_ + "/m2");
    auto r = run("claude-code", mock, {"--review=auto"}, {"--continue", "-p", "Go on.", "--output-format", "json"});
    ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
    const std::string turn = firstAgentTurn(mock.log());
    EXPECT_NE(turn.find("\"step\": 1"), std::string::npos) << "the earlier conversation was not sent:\n" << turn;
    EXPECT_NE(turn.find("AGENT_NOTE.md"), std::string::npos) << turn;
  }
  {
    project_ = projectB;
    fs::create_directories(dir_ + "/m3");
    MockModel mock("single_edit.json", dir_ + "/m3");
    auto r = run("claude-code", mock, {"--review=auto"}, {"--continue", "-p", "Go on.", "--output-format", "json"});
    project_ = projectA;
    const std::string turn = firstAgentTurn(mock.log());
    // Either Claude finds no conversation to continue, or it starts afresh.
    if (!turn.empty()) {
      EXPECT_NE(turn.find("\"step\": 0"), std::string::npos) << "project A's conversation leaked:\n" << turn;
    }
    EXPECT_TRUE(r.exitCode == 0 || turn.empty()) << r.err;
  }
  // One saved state per project, listed by `airlock state ls`; `state rm`
  // removes one project's.
  const std::map<std::string, std::string> env = {{"XDG_DATA_HOME", dir_ + "/data"}};
  auto ls = runAirlock({"state", "ls", "claude-code", "--json"}, "", env, 60, user_ ? &*user_ : nullptr);
  ASSERT_EQ(ls.exitCode, 0) << ls.err;
  EXPECT_NE(ls.out.find("\"project\": \"" + fs::canonical(projectA).string() + "\""), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("\"project\": \"" + fs::canonical(projectB).string() + "\""), std::string::npos) << ls.out;
  auto info = runAirlock({"info", "claude-code", "-w", projectA}, "", env, 60, user_ ? &*user_ : nullptr);
  ASSERT_EQ(info.exitCode, 0) << info.err;
  EXPECT_NE(info.out.find("saved for this project, restored at boot"), std::string::npos) << info.out;
  auto rm = runAirlock({"state", "rm", "claude-code", "-w", projectB}, "", env, 60, user_ ? &*user_ : nullptr);
  ASSERT_EQ(rm.exitCode, 0) << rm.err;
  ls = runAirlock({"state", "ls", "claude-code", "--json"}, "", env, 60, user_ ? &*user_ : nullptr);
  EXPECT_EQ(ls.out.find(fs::canonical(projectB).string()), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find(fs::canonical(projectA).string()), std::string::npos) << ls.out;
}

/// Every file under `dir`: path -> content and modification time.
std::map<std::string, std::string> filesWithTimes(const std::string& dir) {
  std::map<std::string, std::string> out;
  struct stat st {};
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && stat(e.path().c_str(), &st) == 0)
      out[e.path().string()] =
          slurp(e.path().string()) + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  return out;
}

// Issue 16: the user's ~/.claude memory, settings (allowed keys only) and
// skills are in the VM; the dropped key and the token are not; the host's
// files are unchanged and no copy of them is kept with the state.
TEST_F(AgentE2E, ClaudeCodeGetsTheUsersSettingsReadOnly) {
  const std::string home = dir_ + "/home";
  writeFile(home + "/.claude/CLAUDE.md", "Airlock-e2e memory: the user's global instructions.\n");
  writeFile(home + "/.claude/settings.json",
            R"({"cleanupPeriodDays": 77, "apiKeyHelper": "/bin/false",
                "env": {"AIRLOCK_E2E_NOTE": "airlock-e2e-kept", "GITHUB_TOKEN": "airlock-e2e-token"}})");
  writeFile(home + "/.claude/skills/e2e/SKILL.md",
            "---\nname: e2e\ndescription: airlock-e2e-skill, a test skill\n---\nairlock-e2e-skill\n");
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  const auto before = filesWithTimes(home);
  fs::create_directories(dir_ + "/m");
  MockModel mock("settings.json", dir_ + "/m");
  auto r = run("claude-code", mock, {"--review=auto"}, claudeArgs(), home);
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
  EXPECT_TRUE(mock.completed()) << mock.log();
  EXPECT_NE(mock.requests().find("Airlock-e2e memory"), std::string::npos) << "CLAUDE.md did not reach the agent";
  EXPECT_EQ(filesWithTimes(home), before) << "the host's settings changed";
  // The state keeps the conversation, not the copies of the user's files.
  int states = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/data/airlock/state/claude-code")) {
    ++states;
    EXPECT_TRUE(fs::exists(e.path() / "home/.claude/projects"));
    EXPECT_FALSE(fs::exists(e.path() / "home/.claude/CLAUDE.md"));
    EXPECT_FALSE(fs::exists(e.path() / "home/.claude/skills"));
    EXPECT_FALSE(fs::exists(e.path() / "home/.claude/settings.json"));
    // The seeded first-run answers survive the agent's own rewrite of the file.
    EXPECT_NE(slurp((e.path() / "home/.claude.json").string()).find("hasCompletedOnboarding"), std::string::npos);
  }
  EXPECT_EQ(states, 1);
  // `airlock info` names what goes in and what is left out.
  auto info = runAirlock({"info", "claude-code", "-w", project_}, "",
                         {{"HOME", home}, {"XDG_DATA_HOME", dir_ + "/data"}, {"XDG_CONFIG_HOME", dir_ + "/config"}}, 60,
                         user_ ? &*user_ : nullptr);
  ASSERT_EQ(info.exitCode, 0) << info.err;
  EXPECT_NE(info.out.find("~/.claude/CLAUDE.md"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("left out: ~/.claude/settings.json: apiKeyHelper"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("env.GITHUB_TOKEN (may hold a secret)"), std::string::npos) << info.out;
}

// Issue 18, item 1: in the VM the project's repository works (status,
// commit as the user's git identity from ~/.gitconfig and its includes),
// without the host's hooks, credential helpers, fsmonitor, aliases or URL
// tokens; the host's repository is not changed by the agent's commit.
TEST_F(AgentE2E, ClaudeCodeCommitsInASanitizedRepository) {
  auto git = [&](const std::string& args) {
    return std::system(("git -c safe.directory='*' -C '" + project_ + "' " + args + " >/dev/null 2>&1").c_str());
  };
  ASSERT_EQ(git("init -q -b main"), 0);
  ASSERT_EQ(git("-c user.name=Host -c user.email=host@example.com commit -q --allow-empty -m base"), 0);
  ASSERT_EQ(git("remote add origin https://x-access-token:e2e-token@github.com/o/r.git"), 0);
  ASSERT_EQ(git("config credential.helper store"), 0);
  ASSERT_EQ(git("config core.fsmonitor .git/hooks/pre-commit"), 0);
  ASSERT_EQ(git("config alias.st '!touch /workspace/HOOK-RAN'"), 0);
  writeFile(project_ + "/.git/hooks/pre-commit", "#!/bin/sh\ntouch /workspace/HOOK-RAN\n");
  ASSERT_EQ(chmod((project_ + "/.git/hooks/pre-commit").c_str(), 0755), 0);
  const std::string home = dir_ + "/home";
  writeFile(home + "/.gitconfig", "[include]\n\tpath = ~/identity.inc\n[credential]\n\thelper = store\n");
  writeFile(home + "/identity.inc", "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n");
  const std::string hostConfig = slurp(project_ + "/.git/config");
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  fs::create_directories(dir_ + "/m");
  MockModel mock("git_sandbox.json", dir_ + "/m");
  auto r = run("claude-code", mock, {"--review=auto"}, claudeArgs(), home);
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
  EXPECT_TRUE(mock.completed()) << mock.log();
  EXPECT_NE(mock.log().find("agent commit"), std::string::npos) << mock.log();
  EXPECT_FALSE(fs::exists(project_ + "/HOOK-RAN"));
  EXPECT_EQ(slurp(project_ + "/.git/config"), hostConfig) << "the host's repository config changed";
  EXPECT_EQ(git("log -1 --format=%s | grep -qx base"), 0) << "the agent's commit moved the host's branch";
  // Item 3: the commit came back, as a ref of the session's, checked.
  EXPECT_NE(r.err.find("git: 1 new commit on main"), std::string::npos) << r.err;
  EXPECT_EQ(
      git("for-each-ref --format='%(refname)' 'refs/airlock/' | grep -q '^refs/airlock/claude-code-.*/heads/main$'"),
      0);
  EXPECT_EQ(git("log -1 --format='%an <%ae> %s' --glob='refs/airlock/*' | grep -qx 'Ada Lovelace <ada@example.com> "
                "agent commit'"),
            0);
  EXPECT_EQ(git("fsck --strict"), 0);
}

// Issue 18, item 2: the workspace is a linked worktree (its .git a file
// naming the repository outside it). In the VM it is a working repository
// on the worktree's branch without the other worktrees, hooks or host
// paths; the agent's commit comes back into the shared repository as a
// ref of the session's, and the worktree's branch and .git file stay.
TEST_F(AgentE2E, ClaudeCodeCommitsInALinkedWorktree) {
  const std::string repo = dir_ + "/repo";
  auto git = [&](const std::string& dir, const std::string& args) {
    return std::system(("git -c safe.directory='*' -C '" + dir + "' " + args + " >/dev/null 2>&1").c_str());
  };
  fs::create_directories(repo);
  ASSERT_EQ(git(repo, "init -q -b main"), 0);
  ASSERT_EQ(git(repo, "-c user.name=Host -c user.email=host@example.com commit -q --allow-empty -m base"), 0);
  ASSERT_EQ(git(repo, "config credential.helper store"), 0);
  writeFile(repo + "/.git/hooks/pre-commit", "#!/bin/sh\ntouch /workspace/HOOK-RAN\n");
  ASSERT_EQ(chmod((repo + "/.git/hooks/pre-commit").c_str(), 0755), 0);
  project_ = dir_ + "/wt";
  ASSERT_EQ(git(repo, "worktree add -q -b feature " + project_), 0);
  ASSERT_EQ(git(repo, "worktree add -q -b other " + dir_ + "/other"), 0);
  writeFile(project_ + "/README.md", "# Worktree\n");
  const std::string pointer = slurp(project_ + "/.git");
  const std::string home = dir_ + "/home";
  writeFile(home + "/.gitconfig", "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n");
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  fs::create_directories(dir_ + "/m");
  MockModel mock("git_worktree.json", dir_ + "/m");
  auto r = run("claude-code", mock, {"--review=auto"}, claudeArgs(), home);
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
  EXPECT_TRUE(mock.completed()) << mock.log();
  EXPECT_NE(mock.log().find("worktree commit"), std::string::npos) << mock.log();
  EXPECT_FALSE(fs::exists(project_ + "/HOOK-RAN"));
  EXPECT_EQ(slurp(project_ + "/.git"), pointer) << "the worktree's .git file changed";
  EXPECT_EQ(git(project_, "log -1 --format=%s feature | grep -qx base"), 0) << "the agent moved the host's branch";
  EXPECT_NE(r.err.find("git: 1 new commit on feature"), std::string::npos) << r.err;
  EXPECT_EQ(git(repo, "for-each-ref --format='%(refname)' 'refs/airlock/' | grep -q "
                      "'^refs/airlock/claude-code-.*/heads/feature$'"),
            0);
  EXPECT_EQ(git(repo, "log -1 --format='%an %s' --glob='refs/airlock/*' | grep -qx 'Ada Lovelace worktree commit'"), 0);
  EXPECT_EQ(git(repo, "fsck --strict"), 0);
}

TEST_F(AgentE2E, ClaudeCodeReviewNoneLeavesTheHostUntouched) {
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  MockModel mock("edit_project.json", dir_);
  auto before = files();
  auto r = run("claude-code", mock, {"--review=none"}, claudeArgs());
  EXPECT_EQ(r.exitCode, 70) << r.err;
  EXPECT_EQ(files(), before);
  // The changes are kept in the session for later.
  bool kept = false;
  for (const auto& e : fs::recursive_directory_iterator(state_ + "/airlock/sessions"))
    kept |= e.path().filename() == "changes.tar" && e.path().parent_path().filename() == "pending";
  EXPECT_TRUE(kept) << "no pending/changes.tar in the session";
}

// Issue 17: Claude Code detached, as a user would drive it: `run -d` returns
// with the name while the agent works, `diff` shows its change, the session
// ends on its own and waits; `review NAME` lands the change, `rm` clears it.
TEST_F(AgentE2E, ClaudeCodeDetachedWaitsForItsReview) {
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  MockModel mock("single_edit.json", dir_);
  auto before = files();
  auto started = run("claude-code", mock, {"-d", "--name", "bg"}, claudeArgs());
  ASSERT_EQ(started.exitCode, 0) << started.err << "\nmock log:\n" << mock.log();
  EXPECT_EQ(started.out, "bg\n");
  auto airlock = [&](const std::vector<std::string>& args) {
    return runAirlock(args, "", {{"XDG_STATE_HOME", state_}}, 600, user_ ? &*user_ : nullptr);
  };
  std::string state;
  for (int i = 0; i < 1500 && state != "pending review"; ++i) {
    auto ls = nlohmann::json::parse(airlock({"ls", "--all", "--json"}).out, nullptr, false);
    state = ls.is_array() && !ls.empty() ? ls[0].value("state", "") : "";
    if (state == "running") {
      auto d = airlock({"diff", "bg", "--stat"});
      EXPECT_EQ(d.exitCode, 0) << d.err;
    }
    if (state != "pending review") std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(state, "pending review") << airlock({"ls", "--all"}).out << "\nmock log:\n" << mock.log();
  EXPECT_EQ(files(), before) << "a detached session wrote the project before its review";
  auto diff = airlock({"diff", "bg", "--stat"});
  EXPECT_NE(diff.out.find("AGENT_NOTE.md"), std::string::npos) << diff.out << diff.err;
  EXPECT_NE(airlock({"logs", "bg"}).out.find("\"result\""), std::string::npos) << "the agent's JSON output";
  auto reviewed = airlock({"review", "bg", "--review=auto"});
  ASSERT_EQ(reviewed.exitCode, 0) << reviewed.out << reviewed.err;
  auto after = files();
  EXPECT_EQ(after["AGENT_NOTE.md"], "Edited by the agent under airlock.\n");
  after.erase("AGENT_NOTE.md");
  EXPECT_EQ(after, before);
  EXPECT_EQ(foreignOwned(), std::vector<std::string>{});
  EXPECT_EQ(airlock({"rm", "bg"}).exitCode, 0);
  EXPECT_EQ(airlock({"ls", "-a", "-q"}).out, "");
}

TEST_F(AgentE2E, HostEditDuringTheSessionIsAConflictAndNotOverwritten) {
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  MockModel mock("conflict.json", dir_);
  std::string outPath = dir_ + "/airlock.out";
  std::vector<std::string> args = {
      "run", "claude-code", "-q", "-w", project_, "--review=auto", "--host-port", std::to_string(mock.port()), "--"};
  for (const auto& a : claudeArgs()) args.push_back(a);
  pid_t pid = startAirlock(args, outPath,
                           {{"XDG_STATE_HOME", state_},
                            {"XDG_CONFIG_HOME", dir_ + "/config"},
                            {"ANTHROPIC_BASE_URL", mock.guestUrl()},
                            {"ANTHROPIC_API_KEY", "airlock-e2e"}},
                           -1, user_ ? &*user_ : nullptr);
  // Whatever fails below, this airlock (the test user's) does not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};
  // Wait until the agent has done both steps (the mock now holds the final answer).
  bool waiting = false;
  for (int i = 0; i < 6000 && !waiting; ++i) {
    waiting = mock.log().find("\"step\": 2") != std::string::npos;
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(waiting) << slurp(outPath) << mock.log();
  writeFile(project_ + "/README.md", "# Sample project\nEdited by the user during the session.\n");
  writeFile(mock.gateDir() + "/host-edited", "");
  int status = 0;
  waitpid(pid, &status, 0);
  reaper.pid = -1;
  EXPECT_EQ(WEXITSTATUS(status), 71) << slurp(outPath);
  EXPECT_EQ(slurp(project_ + "/README.md"), "# Sample project\nEdited by the user during the session.\n");
  EXPECT_EQ(slurp(project_ + "/NEW.md"), "Written during the conflict test.\n") << "the non-conflicting change lands";
  EXPECT_NE(slurp(outPath).find("README.md"), std::string::npos);
}

TEST_F(AgentE2E, SecretFileNeverEntersTheVmAndIsUntouched) {
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code"));
  MockModel mock("edit_project.json", dir_);
  auto r = run("claude-code", mock, {"--review=auto"}, claudeArgs());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(project_ + "/.env"), "API_TOKEN=do-not-leak\n");
  // The mock saw the agent's `ls -la` of /workspace: README.md listed, .env not.
  std::string log = mock.log();
  EXPECT_NE(log.find("README.md"), std::string::npos);
  EXPECT_EQ(log.find("\"violations\": [{"), std::string::npos) << ".env was visible in the guest:\n" << log;
  EXPECT_EQ(log.find("do-not-leak"), std::string::npos) << "the secret's content reached the model";
}

// The `shell` agent: bash in the Debian base image, no model. A command's
// edit lands through the review like an agent's; localhost resolves in the
// guest without a DNS query to the egress firewall.
TEST_F(AgentE2E, ShellRunsACommandWhoseEditLandsAfterReview) {
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("shell"));
  MockModel mock("single_edit.json", dir_);  // not asked: the shell has no model
  auto before = files();
  auto r = run("shell", mock, {"--review=auto"},
               {"-c", "printf 'Edited by the agent under airlock.\\n' > AGENT_NOTE.md && getent hosts localhost && "
                      "git --version && rg --version >/dev/null && echo \"$SHELL $PWD\""});
  ASSERT_EQ(r.exitCode, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("localhost"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("git version"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/workspace"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("egress blocked"), std::string::npos) << r.err;
  auto after = files();
  EXPECT_EQ(after["AGENT_NOTE.md"], "Edited by the agent under airlock.\n");
  after.erase("AGENT_NOTE.md");
  EXPECT_EQ(after, before);
  EXPECT_EQ(foreignOwned(), std::vector<std::string>{});
}

/// An agent whose image comes from outside the npm registry, its arguments
/// for one scripted task, and what its failed build says when the source
/// cannot be reached.
struct OutsideNpmCase {
  std::string agent;
  std::vector<std::string> args;
  std::string unreachable;
};

void PrintTo(const OutsideNpmCase& c, std::ostream* os) { *os << c.agent; }

class AgentsFromOutsideNpm : public AgentE2E, public testing::WithParamInterface<OutsideNpmCase> {};

// Issue 20: Crush's program is a release archive on GitHub that its npm
// package names with a SHA-256; Hermes Agent is a PyPI package, installed
// by pip in a build VM. Where the source cannot be reached (a build machine
// that reaches only the npm registry) the test says why and is skipped,
// never passed: the archive entry, the SHA-256 check and `--from DIR` are
// unit-tested, and the build VM's whole path by
// PypiAgentFromLocalWheelsLandsAfterReview below.
TEST_P(AgentsFromOutsideNpm, OneScriptedEditLandsAfterReview) {
  const OutsideNpmCase& c = GetParam();
  auto built = runAirlock({"image", "build", "-q", c.agent}, "", {}, 1500);
  if (built.exitCode != 0 && built.err.find(c.unreachable) != std::string::npos)
    GTEST_SKIP() << c.agent << "'s image cannot be built on this machine: " << built.err;
  ASSERT_EQ(built.exitCode, 0) << built.err;
  ASSERT_NO_FATAL_FAILURE(runAsTestUser(c.agent));
  MockModel mock("single_edit.json", dir_);
  auto before = files();
  auto r = run(c.agent, mock, {"--review=auto"}, c.args);
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nagent's output:\n" << r.out << "\nmock log:\n" << mock.log();
  EXPECT_TRUE(mock.completed()) << mock.log();
  auto after = files();
  EXPECT_EQ(after["AGENT_NOTE.md"], "Edited by the agent under airlock.\n") << mock.log();
  after.erase("AGENT_NOTE.md");
  EXPECT_EQ(after, before);
  EXPECT_EQ(foreignOwned(), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Agents, AgentsFromOutsideNpm,
                         testing::Values(OutsideNpmCase{"crush", {"run", "Do the scripted task."}, "cannot download"},
                                         OutsideNpmCase{
                                             "hermes", {"chat", "-q", "Do the scripted task."}, "PyPI unreachable"}),
                         [](const auto& p) { return p.param.agent; });

// Issue 20: a PyPI agent's image, built offline from a wheel the test
// makes (`image build --from DIR`): pip runs in a build VM without network,
// never on the host; the venv it makes is the only thing of the VM's export
// that enters the image; the build leaves no session or lock behind. Built
// by root, then again by the test user (every file of a user's build is
// root's: the agent's home must still become the agent's), and the agent
// (the wheel's console script, on the guest's own Python) runs as the test
// user and its edit lands after review.
TEST_F(AgentE2E, PypiAgentFromLocalWheelsLandsAfterReview) {
  const std::string wheels = dir_ + "/wheels", config = dir_ + "/config", buildState = dir_ + "/build-state";
  fs::create_directories(wheels);
  ASSERT_EQ(std::system(("python3 " + std::string(AIRLOCK_SOURCE_DIR) + "/tests/e2e/make_test_wheel.py " + wheels +
                         " >/dev/null")
                            .c_str()),
            0);
  writeFile(config + "/airlock/config.yaml",
            "agents:\n"
            "  probe:\n"
            "    description: a console script from a wheel\n"
            "    image: {pypi_package: airlock-probe, version: \"1.0\", binary: airlock-probe, "
            "install_as: airlock-probe}\n"
            "    command: [airlock-probe]\n");
  auto build = [&](const std::string& state, TestUser* as) {
    std::map<std::string, std::string> env = {{"XDG_CONFIG_HOME", config}};
    if (!as) env["XDG_STATE_HOME"] = state;
    auto built = runAirlock({"image", "build", "probe", "--force", "--from", wheels}, "", env, 1500, as);
    ASSERT_EQ(built.exitCode, 0) << built.err;
    // stdout is the image path alone: the build VM's output went to stderr.
    EXPECT_EQ(std::count(built.out.begin(), built.out.end(), '\n'), 1) << built.out;
    EXPECT_TRUE(built.out.ends_with(".erofs\n")) << built.out;
    EXPECT_NE(
        built.err.find("installing airlock-probe==1.0 from the 1 files of " + wheels + " in a build VM (no network)"),
        std::string::npos)
        << built.err;
    EXPECT_NE(built.err.find("booting the probe build VM (no network)"), std::string::npos) << built.err;
    EXPECT_NE(built.err.find("Successfully installed airlock-probe-1.0"), std::string::npos) << built.err;
    // The build's session is gone, and so are its workspace's locks.
    auto sessions = runAirlock({"ls", "--all", "-q"}, "", env, 60, as);
    EXPECT_EQ(sessions.exitCode, 0) << sessions.err;
    EXPECT_EQ(sessions.out, "");
    for (const char* locks : {"/airlock/locks", "/airlock/flush"}) {
      std::error_code ec;
      EXPECT_TRUE(!fs::exists(state + locks) || fs::is_empty(state + locks, ec)) << state + locks << " is not empty";
    }
  };
  ASSERT_NO_FATAL_FAILURE(build(buildState, nullptr));
  if (geteuid() == 0) {
    // The test user's cache gets root's base tarballs, not the image.
    std::vector<std::string> bases;
    for (const auto& e : fs::directory_iterator(defaultCacheDir() + "/images"))
      if (e.path().filename().string().starts_with("base-")) bases.push_back(e.path().string());
    user_.emplace(defaultCacheDir(), bases);
    ASSERT_EQ(user_->error(), "");
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      ASSERT_EQ(lchown(e.path().c_str(), TestUser::kUid, TestUser::kUid), 0) << e.path();
    ASSERT_EQ(lchown(dir_.c_str(), TestUser::kUid, TestUser::kUid), 0);
    tun_.emplace(0666);
    ASSERT_NO_FATAL_FAILURE(build(user_->home() + "/state", &*user_));
  }
  MockModel mock("single_edit.json", dir_);  // unused: the probe talks to no model
  auto before = files();
  auto r = run("probe", mock, {"--review=auto"}, {});
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nagent's output:\n" << r.out;
  auto after = files();
  EXPECT_EQ(after["probe.txt"], "probe ran with Python 3.11 from /opt/probe\n");
  after.erase("probe.txt");
  EXPECT_EQ(after, before);
  EXPECT_EQ(foreignOwned(), std::vector<std::string>{});
}

/// An agent and its arguments for one scripted task; `heldBack`: files
/// the agent itself writes into every project it runs in, which the review
/// holds back (agent configuration: they could steer the agent on the host),
/// so the run ends with 70 and they wait in the session.
struct ScriptedCase {
  std::string agent;
  std::vector<std::string> args;
  std::vector<std::string> heldBack;
};

void PrintTo(const ScriptedCase& c, std::ostream* os) { *os << c.agent; }

class OtherAgents : public AgentE2E, public testing::WithParamInterface<ScriptedCase> {};

TEST_P(OtherAgents, OneScriptedEditLandsAfterReview) {
  const ScriptedCase& c = GetParam();
  ASSERT_NO_FATAL_FAILURE(runAsTestUser(c.agent));
  auto before = files();
  MockModel mock("single_edit.json", dir_);
  auto r = run(c.agent, mock, {"--review=auto"}, c.args);
  // 70: the review left changes pending (held back), the rest landed.
  ASSERT_EQ(r.exitCode, c.heldBack.empty() ? 0 : 70) << r.err << "\nagent's output:\n"
                                                     << r.out << "\nmock log:\n" << mock.log();
  EXPECT_TRUE(mock.completed()) << mock.log();
  EXPECT_EQ(r.err.find("egress blocked"), std::string::npos) << "the agent reached for hosts it does not need:\n"
                                                             << r.err;
  auto after = files();
  EXPECT_EQ(after["AGENT_NOTE.md"], "Edited by the agent under airlock.\n") << mock.log();
  after.erase("AGENT_NOTE.md");
  EXPECT_EQ(after, before);
  for (const auto& path : c.heldBack)
    EXPECT_NE(r.err.find(path), std::string::npos) << path << " was not shown held back:\n" << r.err;
  EXPECT_EQ(foreignOwned(), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Agents, OtherAgents,
                         testing::Values(ScriptedCase{"codex", {"Do the scripted task."}, {}},
                                         ScriptedCase{"gemini", {"-p", "Do the scripted task."}, {}},
                                         ScriptedCase{"opencode", {"Do the scripted task."}, {}},
                                         // Grok writes its project settings (which may name MCP
                                         // servers) at its first start, on the host too.
                                         ScriptedCase{"grok", {"-p", "Do the scripted task."}, {".grok/settings.json"}},
                                         ScriptedCase{"qwen-code", {"Do the scripted task."}, {}},
                                         ScriptedCase{"pi", {"-p", "Do the scripted task."}, {}},
                                         ScriptedCase{"copilot", {"-p", "Do the scripted task."}, {}}),
                         [](const auto& p) {
                           std::string name = p.param.agent;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

/// An agent that takes MCP servers, its arguments for one scripted task,
/// and the scenario that lists /workspace through the filesystem server's
/// tool as that agent names and reaches it.
struct McpCase {
  std::string agent;
  std::vector<std::string> args;
  std::string scenario;
};

void PrintTo(const McpCase& c, std::ostream* os) { *os << c.agent; }

class McpAgents : public AgentE2E, public testing::WithParamInterface<McpCase> {};

// MCP (issue 20): the filesystem server from npm, declared in the user's
// config, goes into the agent's image and runs in the VM; the agent lists
// /workspace through it: the snapshot, without .env (checked by the mock).
// A repo config's own MCP server is ignored with its reason, and its tools
// are never offered to the model. Claude Code's prompt comes first, alone:
// airlock's --mcp-config must not take it.
TEST_P(McpAgents, ListTheWorkspaceThroughAnMcpServerOfTheUsersConfigInTheVm) {
  const McpCase& c = GetParam();
  writeFile(dir_ + "/config/airlock/config.yaml",
            "mcp_servers:\n  fs: {npm: \"@modelcontextprotocol/server-filesystem@2026.8.31\", args: [/workspace]}\n");
  writeFile(project_ + "/.airlock.yaml", "mcp_servers:\n  evil: {command: [/bin/sh, -c, 'echo pwned']}\n");
  ASSERT_NO_FATAL_FAILURE(runAsTestUser(c.agent, {{"XDG_CONFIG_HOME", dir_ + "/config"}}));
  MockModel mock(c.scenario, dir_);
  ASSERT_NE(mock.port(), 0);
  auto before = files();
  auto r = run(c.agent, mock, {"--review=auto"}, c.args);
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
  EXPECT_TRUE(mock.completed()) << mock.log();
  const std::string log = mock.log();
  EXPECT_NE(log.find("[FILE] README.md"), std::string::npos) << log;
  EXPECT_EQ(log.find("no usable tool"), std::string::npos) << log;
  EXPECT_NE(r.err.find("ignored mcp_servers: evil: a repo config cannot add MCP servers"), std::string::npos) << r.err;
  const std::string requests = mock.requests();
  EXPECT_NE(requests.find("list_directory"), std::string::npos);
  EXPECT_EQ(requests.find("evil"), std::string::npos);
  auto after = files();
  EXPECT_EQ(after["LISTED.md"], "Listed through MCP.\n");
  after.erase("LISTED.md");
  EXPECT_EQ(after, before);
}

// Claude Code and Qwen Code defer MCP tools: the model loads the tool by
// name with the agent's tool search first (Qwen then calls it through its
// tool_call). Codex also writes its [mcp_servers] table, but reaches MCP
// tools through the Responses API's client tool_search, which the mock
// model does not speak yet.
INSTANTIATE_TEST_SUITE_P(Agents, McpAgents,
                         testing::Values(McpCase{"claude-code", {"Do the scripted task.", "-p"}, "mcp_fs_claude.json"},
                                         McpCase{"gemini", {"-p", "Do the scripted task."}, "mcp_fs_gemini.json"},
                                         McpCase{"qwen-code", {"Do the scripted task."}, "mcp_fs_qwen.json"},
                                         McpCase{"opencode", {"Do the scripted task."}, "mcp_fs_opencode.json"},
                                         McpCase{"copilot", {"-p", "Do the scripted task."}, "mcp_fs_copilot.json"}),
                         [](const auto& p) {
                           std::string name = p.param.agent;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

/// remote_tool_server.py (a streamable-HTTP MCP server demanding a bearer
/// token) on the host's 127.0.0.1, stopped with the test.
class RemoteMcpServer {
 public:
  RemoteMcpServer(const std::string& dir, const std::string& token)
      : log_(dir + "/remote.log"),
        process_({"/usr/bin/python3", std::string(AIRLOCK_SOURCE_DIR) + "/tests/unit/mcp/remote_tool_server.py", token,
                  log_},
                 dir + "/remote.out") {}
  int port() const { return process_.port(); }
  std::string log() const { return slurp(log_); }

 private:
  std::string log_;
  airlock::test::ListeningProcess process_;
};

// MCP through airlock's proxy (issue 20). `host: true`: a stdio server
// written by the test runs on the host, as the user who ran airlock; Claude
// Code in the VM calls its allowed tool and the result reaches the model.
// The model then asks the proxy itself, with curl, for the tool the
// allowlist leaves out: refused, the host file it would read never shows,
// and the refusal is in the session log. The server is gone after the run.
// `url:`: a remote streamable-HTTP server (on the host's loopback, where the
// guest cannot go) is called the same way, with a token taken from
// airlock's environment that never enters the VM.
TEST_F(AgentE2E, ClaudeCodeCallsAnAllowedToolOfAHostMcpServerThroughTheProxy) {
  const std::string server = dir_ + "/host_tool_server.py";
  fs::copy_file(std::string(AIRLOCK_SOURCE_DIR) + "/tests/unit/mcp/host_tool_server.py", server);
  writeFile(dir_ + "/host-secret", "the host's secret\n");
  RemoteMcpServer remote(dir_, "remote-token-e2e");
  ASSERT_NE(remote.port(), 0);
  writeFile(dir_ + "/config/airlock/config.yaml",
            "mcp_servers:\n  notes:\n    host: true\n    command: [python3, " + server +
                "]\n    tools: [echo]\n    env: {MCP_TEST_PID: " + dir_ + "/server.pid, MCP_TEST_LOG: " + dir_ +
                "/server.calls, HOST_SECRET_FILE: " + dir_ + "/host-secret}\n  docs: {url: \"http://127.0.0.1:" +
                std::to_string(remote.port()) + "/mcp\", token: \"env:DOCS_TOKEN\", tools: [echo]}\n");
  ASSERT_NO_FATAL_FAILURE(runAsTestUser("claude-code", {{"XDG_CONFIG_HOME", dir_ + "/config"}}));
  MockModel mock("mcp_host_claude.json", dir_);
  ASSERT_NE(mock.port(), 0);
  auto before = files();
  auto r = run("claude-code", mock, {"--review=auto"}, {"Do the scripted task.", "-p"}, "",
               {{"DOCS_TOKEN", "remote-token-e2e"}});
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
  EXPECT_TRUE(mock.completed()) << mock.log();
  EXPECT_EQ(mock.log().find("violations"), std::string::npos) << mock.log();
  EXPECT_NE(mock.log().find("echo: from the guest"), std::string::npos) << mock.log();
  // The server ran on the host as the user who ran airlock, and is gone.
  const std::string pidText = slurp(dir_ + "/server.pid");
  ASSERT_FALSE(pidText.empty()) << "the host server never started";
  EXPECT_EQ(::kill(std::stoi(pidText), 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the host server outlived the session";
  const std::string calls = slurp(dir_ + "/server.calls");
  EXPECT_NE(calls.find("from the guest"), std::string::npos) << calls;
  EXPECT_EQ(calls.find("host_secret"), std::string::npos) << "the refused call reached the server:\n" << calls;
  std::string sessionLog;
  for (const auto& e : fs::directory_iterator(state_ + "/airlock/sessions"))
    sessionLog += slurp(e.path().string() + "/session.log");
  EXPECT_NE(sessionLog.find("mcp notes: tools/call echo {\"text\":\"from the guest\"}: ok"), std::string::npos)
      << sessionLog;
  EXPECT_NE(sessionLog.find("mcp notes: refused tools/call host_secret {}: not in the allowlist"), std::string::npos)
      << sessionLog;
  EXPECT_NE(mock.log().find("remote echo: from the guest too"), std::string::npos) << mock.log();
  EXPECT_NE(remote.log().find("Bearer remote-token-e2e"), std::string::npos) << remote.log();
  EXPECT_EQ(mock.requests().find("remote-token-e2e"), std::string::npos) << "the token reached the agent";
  EXPECT_NE(sessionLog.find("mcp docs: tools/call echo {\"text\":\"from the guest too\"}: ok"), std::string::npos)
      << sessionLog;
  auto after = files();
  EXPECT_EQ(after["SERVED.md"], "Served from the host through MCP.\n");
  after.erase("SERVED.md");
  EXPECT_EQ(after, before);
}

/// An agent, its arguments for one scripted task, and for going on with
/// its last conversation.
struct ResumeCase {
  std::string agent;
  std::vector<std::string> first, resume;
};

void PrintTo(const ResumeCase& c, std::ostream* os) { *os << c.agent; }

class AgentsResume : public AgentE2E, public testing::WithParamInterface<ResumeCase> {};

// Issue 16: the agent's conversation is kept with the project's state, and
// its own resume flag sends the earlier turn (the mock sees the earlier
// tool call's result and goes on to the next step).
TEST_P(AgentsResume, TheLastConversationOnTheSameProject) {
  const ResumeCase& c = GetParam();
  ASSERT_NO_FATAL_FAILURE(runAsTestUser(c.agent));
  {
    fs::create_directories(dir_ + "/m1");
    MockModel mock("single_edit.json", dir_ + "/m1");
    auto r = run(c.agent, mock, {"--review=auto"}, c.first);
    ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
    ASSERT_EQ(files()["AGENT_NOTE.md"], "Edited by the agent under airlock.\n") << mock.log();
  }
  fs::create_directories(dir_ + "/m2");
  MockModel mock("single_edit.json", dir_ + "/m2");
  auto r = run(c.agent, mock, {"--review=auto"}, c.resume);
  ASSERT_EQ(r.exitCode, 0) << r.err << "\nmock log:\n" << mock.log();
  // A fresh conversation's first turn has no tool results; a resumed one
  // carries the earlier write's.
  const std::string turn = firstAgentTurn(mock.log());
  EXPECT_EQ(turn.find("\"step\": 0"), std::string::npos) << "the earlier conversation was not sent:\n" << mock.log();
  EXPECT_NE(turn.find("AGENT_NOTE.md"), std::string::npos) << mock.log();
}

INSTANTIATE_TEST_SUITE_P(
    Agents, AgentsResume,
    testing::Values(ResumeCase{"codex", {"Do the scripted task."}, {"resume", "--last", "Go on."}},
                    ResumeCase{"gemini", {"-p", "Do the scripted task."}, {"-r", "latest", "-p", "Go on."}},
                    ResumeCase{"opencode", {"Do the scripted task."}, {"--continue", "Go on."}},
                    ResumeCase{"qwen-code", {"Do the scripted task."}, {"--continue", "Go on."}},
                    ResumeCase{"pi", {"-p", "Do the scripted task."}, {"--continue", "-p", "Go on."}}),
    [](const auto& p) {
      std::string name = p.param.agent;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace airlock::test
