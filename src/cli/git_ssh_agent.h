#pragma once
// `--git-ssh-agent`, `--git-ssh-key` and `--git-ssh-confirm`: `git push`
// (and fetch) over SSH from the VM with no key in it. The guest's ssh talks
// to SSH_AUTH_SOCK=guest::kSshAgentSocket, which airlock-init relays over
// the virtio-serial port guest::kSshAgentPort (no network path) to a filter
// on the host (secrets/ssh_agent_filter.h) in front of your own agent: it
// lists only the keys you named and signs only SSH logins with them. The
// egress firewall opens port 22 of the git hosts (--git-host, default
// github.com) and nothing else; ssh in the VM checks the server's key
// against your known_hosts lines for those hosts (StrictHostKeyChecking).

#include <string>
#include <vector>

#include "common/error.h"
#include "common/host_context.h"
#include "config/settings.h"
#include "egress/policy.h"
#include "session/plan.h"

namespace airlock::cli {

/// The keys --git-ssh-agent offers (settings.gitSshKeys), checked: each a
/// fingerprint as `ssh-add -l` prints it, at least one. Empty when the
/// agent is not forwarded. Errors (kUsage): keys without --git-ssh-agent,
/// no key, a malformed fingerprint; each names the fix.
Result<std::vector<std::string>> gitSshKeys(const config::Settings& settings);

/// The egress rules --git-ssh-agent adds: port 22 of each git host (its
/// name, without a port).
std::vector<egress::HostRule> gitSshRules(const std::vector<std::string>& gitHosts);

/// With --git-ssh-agent: checks that your agent ($SSH_AUTH_SOCK) holds every
/// listed key and that your known_hosts files (~/.ssh/known_hosts,
/// /etc/ssh/ssh_known_hosts) know each git host, then puts the filter
/// behind guest::kSshAgentPort, SSH_AUTH_SOCK in the command's environment,
/// ~/.ssh/config and ~/.ssh/known_hosts in its home, and gitSshRules() in
/// the egress policy of `plan`. With --git-ssh-confirm each login first
/// asks $SSH_ASKPASS (SSH_ASKPASS_PROMPT=confirm; exit 0 allows it).
/// Nothing without --git-ssh-agent. Errors (kUsage): as gitSshKeys(), no
/// SSH_AUTH_SOCK, an agent that cannot be reached or lacks a key, a git host
/// with no known_hosts line, --git-ssh-confirm without SSH_ASKPASS, no
/// network (egress profile none).
Result<> applyGitSshAgent(const HostContext& host, const config::Settings& settings, session::Plan& plan);

}  // namespace airlock::cli
