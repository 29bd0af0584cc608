#pragma once
// `--git-ssh-agent`, `--git-ssh-key` and `--git-ssh-confirm`: `git push`
// (and fetch) over SSH from the VM with no key in it. The guest's ssh talks
// to SSH_AUTH_SOCK=guest::kSshAgentSocket, which airlock-init relays over
// the virtio-serial port guest::kSshAgentPort (no network path) to a filter
// on the host (secrets/ssh_agent_filter.h) in front of your own agent: it
// lists only the keys you named and signs only SSH logins with them. The
// egress plan opens port 22 of the git hosts (--git-host, default
// github.com; config/egress_plan.h) and nothing else; ssh in the VM checks
// the server's key against your known_hosts lines for those hosts
// (StrictHostKeyChecking).

#include <string>
#include <vector>

#include "common/error.h"
#include "common/host_context.h"
#include "config/settings.h"
#include "session/plan.h"

namespace airlock::cli {

/// The keys --git-ssh-agent offers (settings.gitSshKeys), checked: each a
/// fingerprint as `ssh-add -l` prints it, at least one. Empty when the
/// agent is not forwarded. Errors (kUsage): --git-ssh-key or
/// --git-ssh-confirm without --git-ssh-agent (in a config they wait for
/// it), no key, a malformed fingerprint; each names the fix.
Result<std::vector<std::string>> gitSshKeys(const config::Settings& settings);

/// With --git-ssh-agent: checks that your agent ($SSH_AUTH_SOCK) holds every
/// listed key and that your known_hosts files (~/.ssh/known_hosts,
/// /etc/ssh/ssh_known_hosts) know each git host, then puts the filter
/// behind guest::kSshAgentPort, SSH_AUTH_SOCK in the command's environment,
/// and ~/.ssh/config and ~/.ssh/known_hosts in its home, of `plan`. With
/// --git-ssh-confirm each login first asks $SSH_ASKPASS
/// (SSH_ASKPASS_PROMPT=confirm; exit 0 allows it; no answer in 60 s or the
/// session stopping refuses it; after 3 refusals the session's logins are
/// refused without asking). Nothing without --git-ssh-agent. Errors:
/// kUsage as gitSshKeys(), no SSH_AUTH_SOCK, a confirmation without
/// SSH_ASKPASS (naming where it was asked for); kHostNotReady for an agent
/// that cannot be reached or lacks a key, a git host with no known_hosts
/// line in `knownHostsFiles`.
Result<> applyGitSshAgent(const HostContext& host, const config::Settings& settings, session::Plan& plan,
                          const std::vector<std::string>& knownHostsFiles);

/// Where your SSH client keeps the host keys it trusts: ~/.ssh/known_hosts
/// of `home`, and /etc/ssh/ssh_known_hosts.
std::vector<std::string> knownHostsFiles(const std::string& home);

}  // namespace airlock::cli
