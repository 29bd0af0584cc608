#include "cli/git_ssh_agent.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cli/git_push.h"
#include "cli/known_hosts.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/subprocess.h"
#include "secrets/ssh_agent_filter.h"
#include "vm/guest_contract.h"

namespace airlock::cli {
namespace {

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

/// Asks $SSH_ASKPASS (OpenSSH's confirm convention) whether a login may be made.
std::function<bool(const secrets::SshLoginRequest&)> askpassConfirm(const HostContext& host, std::string askpass,
                                                                     std::string sessionLabel) {
  std::vector<std::string> env = {"SSH_ASKPASS_PROMPT=confirm"};
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR"})
    if (std::string value = host.getEnv(name); !value.empty()) env.push_back(std::string(name) + "=" + value);
  return [askpass = std::move(askpass), env = std::move(env), sessionLabel = std::move(sessionLabel)](
             const secrets::SshLoginRequest& login) {
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(askpass);
    argv.push_back(fmt::format("airlock: allow {} to log in as {} with your key {}{}?", sessionLabel, login.user,
                               login.fingerprint,
                               login.hostKeyFingerprint.empty() ? "" : " on the server " + login.hostKeyFingerprint));
    auto answered = runCommand(argv);
    return answered && answered->exitCode == 0;
  };
}

}  // namespace

Result<std::vector<std::string>> gitSshKeys(const config::Settings& settings) {
  if (!settings.gitSshAgent.value) {
    if (!settings.gitSshKeys.empty())
      return failWith(exit_code::kUsage,
                      "--git-ssh-key (git_ssh_keys) names keys for --git-ssh-agent; add --git-ssh-agent (or "
                      "git_ssh_agent: true in your config)");
    return std::vector<std::string>{};
  }
  std::vector<std::string> keys;
  for (const auto& k : settings.gitSshKeys) {
    if (!secrets::isSshFingerprint(k.value))
      return failWith(exit_code::kUsage,
                      "--git-ssh-key takes a key's fingerprint as `ssh-add -l` prints it (SHA256: and 43 "
                      "characters), got '{}'",
                      k.value);
    if (std::find(keys.begin(), keys.end(), k.value) == keys.end()) keys.push_back(k.value);
  }
  if (keys.empty())
    return failWith(exit_code::kUsage,
                    "--git-ssh-agent offers only the keys you list: add --git-ssh-key SHA256:... (`ssh-add -l` "
                    "prints yours) or git_ssh_keys in your config");
  return keys;
}

std::vector<egress::HostRule> gitSshRules(const std::vector<std::string>& gitHosts) {
  std::vector<egress::HostRule> rules;
  for (const auto& h : gitHosts) {
    egress::HostRule rule{h.substr(0, h.find(':')), {22}};
    if (std::none_of(rules.begin(), rules.end(), [&](const egress::HostRule& r) { return r.pattern == rule.pattern; }))
      rules.push_back(std::move(rule));
  }
  return rules;
}

Result<> applyGitSshAgent(const HostContext& host, const config::Settings& settings, session::Plan& plan) {
  auto keys = gitSshKeys(settings);
  if (!keys) return std::unexpected(keys.error());
  if (keys->empty()) return {};
  auto hosts = gitPushHosts(settings);
  if (!hosts) return std::unexpected(hosts.error());
  if (!plan.machine.egress)
    return failWith(exit_code::kUsage, "--git-ssh-agent needs the VM on the network (an egress profile)");
  const std::string socket = host.getEnv("SSH_AUTH_SOCK");
  if (socket.empty())
    return failWith(exit_code::kUsage,
                    "--git-ssh-agent forwards your SSH agent, and SSH_AUTH_SOCK is not set: start one (eval "
                    "\"$(ssh-agent)\") and ssh-add your key");
  auto agent = secrets::connectSshAgent(socket);
  if (!agent) return failWith(exit_code::kUsage, "--git-ssh-agent: {}", agent.error().message);
  auto held = secrets::agentFingerprints(std::move(*agent));
  if (!held) return failWith(exit_code::kUsage, "--git-ssh-agent: {}", held.error().message);
  for (const auto& key : *keys)
    if (std::find(held->begin(), held->end(), key) == held->end())
      return failWith(exit_code::kUsage, "--git-ssh-key {}: your SSH agent does not hold that key; ssh-add it "
                                         "(`ssh-add -l` lists what it holds)",
                      key);
  std::string knownHosts;
  const std::string files[] = {host.dirs.home + "/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"};
  for (const auto& rule : gitSshRules(*hosts)) {
    std::string lines;
    for (const auto& file : files)
      if (auto text = readFile(file, 16 << 20)) lines += knownHostsFor(*text, rule.pattern);
    if (lines.empty())
      return failWith(exit_code::kUsage,
                      "--git-ssh-agent: {} has no line for {}, so ssh in the VM could not check the server; connect "
                      "once from this host (ssh -T git@{}) and check the key it shows",
                      files[0], rule.pattern, rule.pattern);
    knownHosts += lines;
  }
  secrets::SshAgentFilterOptions options;
  options.fingerprints = *keys;
  options.connectAgent = [socket] { return secrets::connectSshAgent(socket); };
  if (settings.gitSshConfirm.value) {
    const std::string askpass = host.getEnv("SSH_ASKPASS");
    if (askpass.empty())
      return failWith(exit_code::kUsage,
                      "--git-ssh-confirm asks through SSH_ASKPASS, which is not set: point it at a program such as "
                      "ssh-askpass (package ssh-askpass)");
    options.confirm = askpassConfirm(host, askpass, plan.name.empty() ? "the agent" : "session " + plan.name);
  }
  plan.machine.servedPorts.push_back(
      {guest::kSshAgentPort, [options](int port, const std::function<void(const std::string&)>& log) {
         secrets::SshAgentFilterOptions withLog = options;
         withLog.log = log;
         secrets::SshAgentFilter(std::move(withLog)).serve(port);
       }});
  for (auto& rule : gitSshRules(*hosts)) plan.machine.egress->hosts.push_back(std::move(rule));
  plan.exec.env.push_back(std::string("SSH_AUTH_SOCK=") + guest::kSshAgentSocket);
  plan.homeFiles.push_back({".ssh/config", guestSshConfig()});
  plan.homeFiles.push_back({".ssh/known_hosts", knownHosts});
  return {};
}

}  // namespace airlock::cli
