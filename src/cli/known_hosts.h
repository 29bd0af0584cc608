#pragma once
// Picking a host's lines out of OpenSSH known_hosts files (sshd(8),
// "SSH_KNOWN_HOSTS FILE FORMAT"), so that ssh in the VM checks the git
// server's key against what you already trust (--git-ssh-agent).

#include <string>
#include <string_view>
#include <vector>

namespace airlock::cli {

/// The lines of `knownHosts` (a known_hosts file's text) whose host
/// patterns match `host` on port 22: plain names (any case), wildcards (`*`,
/// `?`), negations (`!pattern` excludes the line), and hashed names
/// (`|1|salt|hash`: HMAC-SHA1 of the name keyed with the salt, as
/// HashKnownHosts writes them). Markers (@cert-authority, @revoked) are
/// kept. Each kept line ends in '\n'; comments and blank lines are dropped.
std::string knownHostsFor(std::string_view knownHosts, std::string_view host);

/// The host keys (their wire blobs, base64-decoded) of the plain lines of
/// `knownHosts` (no @revoked or @cert-authority line, no comment).
std::vector<std::string> knownHostKeys(std::string_view knownHosts);

}  // namespace airlock::cli
