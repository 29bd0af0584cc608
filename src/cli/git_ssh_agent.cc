#include "cli/git_ssh_agent.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/git_push.h"
#include "cli/known_hosts.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/subprocess.h"
#include "common/visible_text.h"
#include "config/egress_plan.h"
#include "secrets/ssh_agent_filter.h"
#include "vm/guest_contract.h"

namespace airlock::cli {
namespace {

/// How long a confirmation may wait for its answer, and how many refusals
/// end the questions for the session (a guest must not pester the user).
constexpr auto kConfirmTimeout = std::chrono::seconds(60);
constexpr int kRefusalsBeforeNoMoreQuestions = 3;

/// The guest's ~/.ssh/config: the relayed agent, and the server's key
/// checked against the known_hosts airlock writes.
std::string guestSshConfig() {
  return fmt::format(
      "# airlock --git-ssh-agent: your SSH agent on the host answers through {} (listed keys, SSH logins only).\n"
      "Host *\n"
      "\tIdentityAgent {}\n"
      "\tStrictHostKeyChecking yes\n"
      "\tUserKnownHostsFile ~/.ssh/known_hosts\n"
      "\tUpdateHostKeys no\n"
      "\tBatchMode yes\n",
      guest::kSshAgentSocket, guest::kSshAgentSocket);
}

using Confirm = std::function<bool(const secrets::SshLoginRequest&, const std::function<bool()>& cancelled)>;

/// Asks $SSH_ASKPASS (OpenSSH's confirm convention: SSH_ASKPASS_PROMPT=confirm,
/// exit 0 allows) whether a login may be made; no answer within
/// kConfirmTimeout, or the session stopping, refuses it.
Confirm askpassConfirm(const HostContext& host, std::string askpass, std::string sessionLabel) {
  std::vector<std::string> prefix = {findProgram("env"), "SSH_ASKPASS_PROMPT=confirm"};
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"})
    if (std::string value = host.getEnv(name); !value.empty()) prefix.push_back(std::string(name) + "=" + value);
  prefix.push_back(std::move(askpass));
  auto refusals = std::make_shared<int>(0);
  return [prefix = std::move(prefix), sessionLabel = std::move(sessionLabel), refusals](
             const secrets::SshLoginRequest& login, const std::function<bool()>& cancelled) {
    if (*refusals >= kRefusalsBeforeNoMoreQuestions) return false;
    std::vector<std::string> argv = prefix;
    argv.push_back(visibleText(fmt::format(
        "airlock: allow {} to log in as {} with your key {} {}?", sessionLabel, login.user, login.fingerprint,
        login.hostKeyFingerprint.empty() ? "(its ssh does not say to which server)"
                                         : "to the git host whose key is " + login.hostKeyFingerprint)));
    bool allowed = false;
    if (auto pid = spawnTied(argv, SpawnOptions{})) {
      const auto deadline = std::chrono::steady_clock::now() + kConfirmTimeout;
      int status = 0;
      for (;;) {
        if (waitpid(*pid, &status, WNOHANG) == *pid) {
          allowed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
          break;
        }
        if (cancelled() || std::chrono::steady_clock::now() > deadline) {
          kill(-*pid, SIGKILL);  // its own process group: the dialog too
          waitpid(*pid, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    if (!allowed) ++*refusals;
    return allowed;
  };
}

}  // namespace

Result<std::vector<std::string>> gitSshKeys(const config::Settings& settings) {
  if (!settings.gitSshAgent.value) {
    for (const auto& k : settings.gitSshKeys)
      if (k.layer == config::Layer::kFlag)
        return failWith(exit_code::kUsage,
                        "--git-ssh-key names a key for --git-ssh-agent; add --git-ssh-agent (or git_ssh_agent: true "
                        "in your config)");
    if (settings.gitSshConfirm.value && settings.gitSshConfirm.layer == config::Layer::kFlag)
      return failWith(exit_code::kUsage,
                      "--git-ssh-confirm asks before --git-ssh-agent's logins; add --git-ssh-agent (or "
                      "git_ssh_agent: true in your config)");
    return std::vector<std::string>{};
  }
  std::vector<std::string> keys;
  for (const auto& k : settings.gitSshKeys) {
    if (!secrets::isSshFingerprint(k.value))
      return failWith(exit_code::kUsage,
                      "--git-ssh-key (git_ssh_keys) takes a key's fingerprint as `ssh-add -l` prints it (SHA256: and "
                      "43 characters), got '{}'",
                      visibleText(k.value));
    if (std::find(keys.begin(), keys.end(), k.value) == keys.end()) keys.push_back(k.value);
  }
  if (keys.empty())
    return failWith(exit_code::kUsage,
                    "--git-ssh-agent offers only the keys you list: add --git-ssh-key SHA256:... (`ssh-add -l` "
                    "prints yours) or git_ssh_keys in your config");
  return keys;
}

std::vector<std::string> knownHostsFiles(const std::string& home) {
  return {home + "/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"};
}

Result<> applyGitSshAgent(const HostContext& host, const config::Settings& settings, session::Plan& plan,
                          const std::vector<std::string>& knownHostsFiles) {
  auto keys = gitSshKeys(settings);
  if (!keys) return std::unexpected(keys.error());
  if (keys->empty()) return {};
  auto hosts = gitPushHosts(settings);
  if (!hosts) return std::unexpected(hosts.error());
  const std::string socket = host.getEnv("SSH_AUTH_SOCK");
  if (socket.empty())
    return failWith(exit_code::kUsage,
                    "--git-ssh-agent forwards your SSH agent, and SSH_AUTH_SOCK is not set: start one (eval "
                    "\"$(ssh-agent)\") and ssh-add your key");
  auto agent = secrets::connectSshAgent(socket);
  if (!agent)
    return failWith(exit_code::kHostNotReady,
                    "--git-ssh-agent: {}; is your ssh-agent running? (eval \"$(ssh-agent)\", then ssh-add)",
                    agent.error().message);
  auto held = secrets::agentFingerprints(std::move(*agent));
  if (!held) return failWith(exit_code::kHostNotReady, "--git-ssh-agent: {}", held.error().message);
  for (const auto& key : *keys)
    if (std::find(held->begin(), held->end(), key) == held->end())
      return failWith(exit_code::kHostNotReady,
                      "--git-ssh-key {}: your SSH agent does not hold that key; ssh-add it (`ssh-add -l` lists what "
                      "it holds)",
                      key);
  std::string knownHosts;
  for (const auto& name : config::gitSshHosts(settings)) {
    std::string lines;
    for (const auto& file : knownHostsFiles)
      if (auto text = readFile(file, 16 << 20)) lines += knownHostsFor(*text, name);
    if (lines.empty())
      return failWith(exit_code::kHostNotReady,
                      "--git-ssh-agent: {} has no line for {}, so ssh in the VM could not check the server; connect "
                      "once from this host (ssh -T git@{}) and check the key it shows",
                      knownHostsFiles.empty() ? std::string("no known_hosts file") : knownHostsFiles.front(), name,
                      name);
    knownHosts += lines;
  }
  secrets::SshAgentFilterOptions options;
  options.fingerprints = *keys;
  for (const auto& blob : knownHostKeys(knownHosts)) options.hostKeys.push_back(secrets::sshFingerprint(blob));
  options.connectAgent = [socket] { return secrets::connectSshAgent(socket); };
  if (settings.gitSshConfirm.value) {
    const std::string askpass = host.getEnv("SSH_ASKPASS");
    const std::string what = settings.gitSshConfirm.layer == config::Layer::kFlag ? "--git-ssh-confirm"
                             : settings.gitSshConfirm.layer == config::Layer::kRepo
                                 ? "git_ssh_confirm (this repository's .airlock.yaml)"
                                 : "git_ssh_confirm (your config)";
    if (askpass.empty())
      return failWith(exit_code::kUsage,
                      "{} asks through SSH_ASKPASS, which is not set: point it at a program such as ssh-askpass "
                      "(package ssh-askpass)",
                      what);
    options.confirm = askpassConfirm(host, askpass, plan.name.empty() ? "the agent" : "session " + plan.name);
  }
  plan.machine.servedPorts.push_back(
      {guest::kSshAgentPort, [options](int port, const std::function<void(const std::string&)>& log) {
         secrets::SshAgentFilterOptions withLog = options;
         withLog.log = log;
         secrets::SshAgentFilter(std::move(withLog)).serve(port);
       }});
  std::erase_if(plan.exec.env, [](const std::string& e) { return e.starts_with("SSH_AUTH_SOCK="); });
  plan.exec.env.push_back(std::string("SSH_AUTH_SOCK=") + guest::kSshAgentSocket);
  plan.homeFiles.push_back({".ssh/config", guestSshConfig()});
  plan.homeFiles.push_back({".ssh/known_hosts", knownHosts});
  return {};
}

}  // namespace airlock::cli
