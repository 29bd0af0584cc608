// --git-ssh-agent, --git-ssh-key and --git-ssh-confirm: which keys (checked
// against a real ssh-agent), which hosts get port 22, which known_hosts
// lines go into the VM, and what the plan gets; each refusal names its fix.

#include "cli/git_ssh_agent.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <fstream>

#include "cli/known_hosts.h"
#include "common/exit_codes.h"
#include "support/scratch.h"
#include "vm/guest_contract.h"

namespace airlock::cli {
namespace {

std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

config::Settings withSsh(bool agent, const std::vector<std::string>& keys, const std::vector<std::string>& hosts = {}) {
  config::Settings s;
  s.gitSshAgent = {agent, config::Layer::kFlag};
  for (const auto& k : keys) s.gitSshKeys.push_back({k, config::Layer::kFlag});
  for (const auto& h : hosts) s.gitHosts.push_back({h, config::Layer::kFlag});
  return s;
}

constexpr const char* kFingerprint = "SHA256:0CkLlpZ9hXGhXOzBi3VmDhWQoTVyvNo8OmXVzdxCHwY";

TEST(GitSshKeys, OnlyWithTheAgentAndOnlyFingerprints) {
  EXPECT_TRUE(gitSshKeys(withSsh(false, {}))->empty());
  auto keysAlone = gitSshKeys(withSsh(false, {kFingerprint}));
  ASSERT_FALSE(keysAlone) << "--git-ssh-key without --git-ssh-agent";
  EXPECT_NE(keysAlone.error().message.find("add --git-ssh-agent"), std::string::npos);
  config::Settings configured;
  configured.gitSshKeys.push_back({kFingerprint, config::Layer::kUser});
  EXPECT_TRUE(gitSshKeys(configured)->empty()) << "keys in your config, the agent off for this run: nothing, no error";
  auto none = gitSshKeys(withSsh(true, {}));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, exit_code::kUsage);
  EXPECT_NE(none.error().message.find("ssh-add -l"), std::string::npos);
  for (const char* bad : {"MD5:12:34", "SHA256:short", "~/.ssh/id_ed25519.pub", "ssh-ed25519 AAAA"}) {
    auto r = gitSshKeys(withSsh(true, {bad}));
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("fingerprint"), std::string::npos);
  }
  EXPECT_EQ(*gitSshKeys(withSsh(true, {kFingerprint, kFingerprint})), std::vector<std::string>{kFingerprint});
  config::Settings confirmAlone;
  confirmAlone.gitSshConfirm = {true, config::Layer::kFlag};
  EXPECT_FALSE(gitSshKeys(confirmAlone)) << "--git-ssh-confirm without --git-ssh-agent";
}

TEST(KnownHosts, PlainWildcardNegatedAndHashedNames) {
  const std::string file =
      sh("d=$(mktemp -d) && ssh-keygen -q -t ed25519 -N '' -f $d/k && "
         "echo \"git.example.test $(cut -d' ' -f1,2 $d/k.pub)\" > $d/kh && "
         "ssh-keygen -q -H -f $d/kh >/dev/null 2>&1 && cat $d/kh; rm -rf $d");
  ASSERT_TRUE(file.starts_with("|1|")) << file;
  EXPECT_EQ(knownHostsFor(file, "git.example.test"), file + "\n") << "a hashed line, as ssh-keygen -H writes it";
  EXPECT_EQ(knownHostsFor(file, "Git.Example.Test"), file + "\n");
  EXPECT_EQ(knownHostsFor(file, "other.example.test"), "");
  const std::string text =
      "# comment\n"
      "github.com,140.82.112.3 ssh-ed25519 AAAAgh\n"
      "[github.com]:2222 ssh-ed25519 AAAAport\n"
      "*.example.com,!evil.example.com ssh-rsa AAAAwild\n"
      "@revoked github.com ssh-rsa AAAArevoked\n"
      "gitlab.com ssh-ed25519\n"
      "\n";
  EXPECT_EQ(knownHostsFor(text, "github.com"),
            "github.com,140.82.112.3 ssh-ed25519 AAAAgh\n"
            "@revoked github.com ssh-rsa AAAArevoked\n");
  EXPECT_EQ(knownHostsFor(text, "git.example.com"), "*.example.com,!evil.example.com ssh-rsa AAAAwild\n");
  EXPECT_EQ(knownHostsFor(text, "evil.example.com"), "");
  EXPECT_EQ(knownHostsFor(text, "gitlab.com"), "") << "a line without a key";
  EXPECT_EQ(knownHostKeys("github.com ssh-ed25519 YWJj\n@revoked github.com ssh-rsa eHl6\n# c\nx ssh-rsa !!\n"),
            std::vector<std::string>{"abc"})
      << "plain lines' keys only";
}

class GitSshAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string d = dir_.path();
    sh("ssh-keygen -q -t ed25519 -N '' -f " + d + "/a && ssh-keygen -q -t ed25519 -N '' -f " + d + "/b");
    const std::string started = sh("ssh-agent -s -a " + d + "/agent.sock");
    agentPid_ = std::atoi(started.c_str() + started.find("SSH_AGENT_PID=") + 14);
    sh("SSH_AUTH_SOCK=" + d + "/agent.sock ssh-add -q " + d + "/a 2>&1");
    keyA_ = sh("ssh-keygen -lf " + d + "/a.pub | cut -d' ' -f2");
    keyB_ = sh("ssh-keygen -lf " + d + "/b.pub | cut -d' ' -f2");
    host_.dirs.home = d + "/home";
    sh("mkdir -p " + d + "/home/.ssh && echo 'github.com ssh-ed25519 AAAAhostkey' > " + d + "/home/.ssh/known_hosts");
    host_.env["SSH_AUTH_SOCK"] = d + "/agent.sock";
    files_ = {d + "/home/.ssh/known_hosts", d + "/no-such-system-file"};
  }
  void TearDown() override {
    if (agentPid_ > 0) kill(agentPid_, SIGTERM);
  }
  TempDir dir_ = test::scratchDir("airlock-git-ssh-");
  pid_t agentPid_ = -1;
  std::string keyA_, keyB_;
  HostContext host_;
  session::Plan plan_;
  std::vector<std::string> files_;
};

TEST_F(GitSshAgent, ThePlanGetsThePortTheSocketTheSshFilesAndPort22) {
  ASSERT_TRUE(keyA_.starts_with("SHA256:")) << keyA_;
  auto r = applyGitSshAgent(host_, withSsh(true, {keyA_}), plan_, files_);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(plan_.machine.servedPorts.size(), 1u);
  EXPECT_EQ(plan_.machine.servedPorts[0].name, guest::kSshAgentPort);
  EXPECT_EQ(plan_.exec.env, std::vector<std::string>{std::string("SSH_AUTH_SOCK=") + guest::kSshAgentSocket});
  ASSERT_EQ(plan_.homeFiles.size(), 2u);
  EXPECT_EQ(plan_.homeFiles[0].path, ".ssh/config");
  EXPECT_NE(plan_.homeFiles[0].content.find("StrictHostKeyChecking yes"), std::string::npos);
  EXPECT_EQ(plan_.homeFiles[1].path, ".ssh/known_hosts");
  EXPECT_EQ(plan_.homeFiles[1].content, "github.com ssh-ed25519 AAAAhostkey\n");
  EXPECT_EQ(knownHostsFiles("/home/u"),
            (std::vector<std::string>{"/home/u/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"}));
}

TEST_F(GitSshAgent, EachRefusalNamesItsFix) {
  auto expectError = [&](const config::Settings& s, const std::string& words, int code = exit_code::kHostNotReady) {
    session::Plan plan;
    auto r = applyGitSshAgent(host_, s, plan, files_);
    ASSERT_FALSE(r) << words;
    EXPECT_EQ(r.error().code, code) << words;
    EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
    EXPECT_TRUE(plan.machine.servedPorts.empty());
  };
  expectError(withSsh(true, {keyB_}), "does not hold that key; ssh-add it");
  expectError(withSsh(true, {keyA_}, {"gitlab.com"}), "has no line for gitlab.com");
  auto confirm = withSsh(true, {keyA_});
  confirm.gitSshConfirm = {true, config::Layer::kFlag};
  expectError(confirm, "--git-ssh-confirm asks through SSH_ASKPASS", exit_code::kUsage);
  confirm.gitSshConfirm = {true, config::Layer::kRepo};
  expectError(confirm, "git_ssh_confirm (this repository's .airlock.yaml) asks", exit_code::kUsage);
  host_.env["SSH_AUTH_SOCK"] = dir_.path() + "/gone.sock";
  expectError(withSsh(true, {keyA_}), "is your ssh-agent running?");
  host_.env.erase("SSH_AUTH_SOCK");
  expectError(withSsh(true, {keyA_}), "SSH_AUTH_SOCK is not set", exit_code::kUsage);
}

TEST_F(GitSshAgent, NothingWithoutTheFlag) {
  ASSERT_TRUE(applyGitSshAgent(host_, withSsh(false, {}), plan_, files_));
  EXPECT_TRUE(plan_.machine.servedPorts.empty());
  EXPECT_TRUE(plan_.homeFiles.empty());
  EXPECT_TRUE(plan_.exec.env.empty());
}

}  // namespace
}  // namespace airlock::cli
