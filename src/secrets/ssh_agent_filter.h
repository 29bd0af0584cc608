#pragma once
// The host end of --git-ssh-agent: answers the guest's SSH agent requests
// (carried over the virtio-serial port guest::kSshAgentPort, no network
// path) with the host's own agent, but only
//   - lists the keys whose fingerprint the user listed (--git-ssh-key),
//     each with its fingerprint as its comment (not the host's comment,
//     which names a user and machine), and
//   - signs with such a key only data that is an SSH login (a
//     SSH_MSG_USERAUTH_REQUEST for "publickey" with that very key, RFC 4252
//     section 7, or OpenSSH's publickey-hostbound-v00) as a plain user name
//     (at most 64 of [A-Za-z0-9._@+-]), at most kMaxLoginsPerMinute, and
//     optionally after the user confirmed it;
// every other request (adding, removing or locking keys, extensions, signing
// anything else: git commits, tokens) gets SSH_AGENT_FAILURE. The protocol
// is draft-ietf-sshm-ssh-agent (OpenSSH's PROTOCOL.agent): each message is
// a u32 length, then a type byte and its contents; at most 256 KiB.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::secrets {

/// The most bytes of one agent message (OpenSSH's AGENT_MAX_LEN).
inline constexpr uint32_t kMaxAgentMessage = 256 * 1024;
/// Logins signed (or asked about) in any minute; beyond, refused: a git
/// push makes one, and a guest must not flood the host agent or the log.
inline constexpr size_t kMaxLoginsPerMinute = 30;

/// OpenSSH's fingerprint of a public key blob: "SHA256:" and the unpadded
/// base64 of its SHA-256 (what `ssh-add -l` and `ssh-keygen -lf` print).
std::string sshFingerprint(std::string_view keyBlob);

/// Whether `text` is such a fingerprint ("SHA256:" and 43 base64 characters).
bool isSshFingerprint(std::string_view text);

/// A login the guest asks the agent to sign.
struct SshLoginRequest {
  std::string fingerprint;  ///< the key's
  std::string user;         ///< the account it logs in as ("git")
  /// The server's host key fingerprint, when the client said which server
  /// (publickey-hostbound-v00@openssh.com); "" otherwise.
  std::string hostKeyFingerprint;
};

struct SshAgentFilterOptions {
  /// Keys that may be listed and used, by fingerprint (sshFingerprint()).
  std::vector<std::string> fingerprints;
  /// The git hosts' own keys, by fingerprint: a login that names its server
  /// (publickey-hostbound-v00) is signed only for one of them. A plain
  /// "publickey" login names none, and cannot be checked. Empty: no check.
  std::vector<std::string> hostKeys;
  /// Opens a connection to the host's agent (a unix socket).
  std::function<Result<Fd>()> connectAgent;
  /// Asked before each signature; false refuses it. `cancelled()` turns
  /// true when the stream being served ended (the VM stopped): stop asking
  /// and refuse. Unset: no question.
  std::function<bool(const SshLoginRequest&, const std::function<bool()>& cancelled)> confirm;
  /// One line per signature made or refused (the session's egress log).
  std::function<void(const std::string&)> log;
};

/// Connects to the SSH agent listening on the unix socket `path`
/// ($SSH_AUTH_SOCK). Errors name the path.
Result<Fd> connectSshAgent(const std::string& path);

/// The fingerprints of the keys the agent at `agent` (a new connection)
/// holds, in its order. Errors: it does not answer, or not as an agent.
Result<std::vector<std::string>> agentFingerprints(Fd agent);

class SshAgentFilter {
 public:
  explicit SshAgentFilter(SshAgentFilterOptions options) : options_(std::move(options)) {}

  /// Answers one request (type byte and contents, no length prefix) with
  /// the reply to send back (same form). Never fails: a request it does not
  /// serve, a malformed one, or an unreachable host agent is answered
  /// SSH_AGENT_FAILURE.
  std::string answer(std::string_view request);

  /// Serves the stream `fd` (the port's socket): reads length-prefixed
  /// requests and writes the replies, until end of stream, an error, or a
  /// request over kMaxAgentMessage (the stream is out of step: it stops and
  /// logs why). Blocking; returns when it is done.
  void serve(int fd);

 private:
  /// The host agent's identities answer (type 12), filtered, or nothing.
  std::optional<std::string> identities();
  std::string sign(std::string_view contents);
  void log(const std::string& line) const;
  /// Whether another login fits in the last minute's budget (records it).
  bool withinRate();
  SshAgentFilterOptions options_;
  int port_ = -1;  ///< the stream serve() reads, for cancelled()
  std::vector<std::chrono::steady_clock::time_point> recentLogins_;
  bool rateLogged_ = false;
};

}  // namespace airlock::secrets
