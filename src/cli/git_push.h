#pragma once
// `--git-token` and `--git-host`: `git push` (and fetch) over HTTPS from the
// VM with no token in it. The guest's git sends https://HOST/ to the git
// broker at the gateway instead (a url.insteadOf rewrite in its
// ~/.gitconfig: http://10.0.2.2:4181/HOST/), which adds the token on the
// host and forwards to https://HOST/ (secrets/credential_broker.h). Hosts
// other than the listed ones are refused by the broker; the guest's own
// egress rules do not change.

#include <string>
#include <vector>

#include "common/error.h"
#include "common/host_context.h"
#include "config/settings.h"
#include "session/plan.h"

namespace airlock::cli {

/// The token --git-token names: "env:NAME" (that variable of airlock's
/// environment, non-empty) or "secret:NAME" (airlock's secret store,
/// `airlock secret set NAME`). Errors (kUsage): another form, an unset or
/// empty variable, a missing secret; each names the fix. The token is never
/// in the message.
Result<std::string> readGitToken(const HostContext& host, const std::string& source);

/// The hosts the git token and the SSH agent are used for:
/// `settings.gitHosts` (--git-host, git_hosts), or github.com. Each is a
/// lower-case DNS name with an optional ":PORT". Empty without a token
/// (--git-token, git_token) and without --git-ssh-agent. Errors (kUsage):
/// hosts without either, a malformed host.
Result<std::vector<std::string>> gitPushHosts(const config::Settings& settings);

/// The guest's git config that sends each host's HTTPS URLs to the broker
/// ("[url \"http://10.0.2.2:4181/github.com/\"]\n\tinsteadOf = https://github.com/\n").
std::string gitBrokerConfig(const std::vector<std::string>& hosts);

/// With a git token (`settings.gitToken`): reads it, puts the broker at the
/// gateway port secrets::kGitBrokerPort of `plan` and the rewrite into the
/// guest's ~/.gitconfig (appended to the plan's, or a new one). `caFile`:
/// PEM the broker trusts instead of the system store ("" = system). Nothing
/// without a token. Errors: as readGitToken() and gitPushHosts(); kUsage
/// when a --host-port takes the broker's port.
Result<> applyGitPush(const HostContext& host, const config::Settings& settings, const std::string& caFile,
                      session::Plan& plan);

}  // namespace airlock::cli
