#include "secrets/ssh_agent_filter.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <openssl/sha.h>

#include "common/encoding.h"

namespace airlock::secrets {
namespace {

// Message numbers (PROTOCOL.agent / draft-ietf-sshm-ssh-agent section 6.1).
constexpr uint8_t kFailure = 5;
constexpr uint8_t kRequestIdentities = 11;
constexpr uint8_t kIdentitiesAnswer = 12;
constexpr uint8_t kSignRequest = 13;
constexpr uint8_t kSignResponse = 14;
// RFC 4252 section 7.
constexpr uint8_t kUserauthRequest = 50;
// The signature flags a login may ask for: SSH_AGENT_RSA_SHA2_256 and _512.
constexpr uint32_t kLoginSignFlags = 2 | 4;
// A session identifier is an exchange hash: SHA-1 to SHA-512 (20 to 64 bytes).
constexpr size_t kMinSessionId = 20, kMaxSessionId = 64;
// A login's user name: what git hosts and people use, nothing to escape.
constexpr size_t kMaxUserName = 64;
// How long the host's agent may take (a key that asks for a touch or a PIN).
constexpr time_t kAgentTimeoutSeconds = 120;

bool plainUserName(std::string_view user) {
  return !user.empty() && user.size() <= kMaxUserName && std::all_of(user.begin(), user.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '@' || c == '+' || c == '-';
  });
}

/// Reads SSH wire types (RFC 4251 section 5) from a buffer; any read past
/// the end marks it bad.
class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  std::optional<uint8_t> byte() {
    if (data_.size() < 1) return bad();
    uint8_t b = static_cast<uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return b;
  }
  std::optional<uint32_t> u32() {
    if (data_.size() < 4) return bad();
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(data_[i]);
    data_.remove_prefix(4);
    return v;
  }
  std::optional<std::string_view> string() {
    auto n = u32();
    if (!n || data_.size() < *n) return bad();
    std::string_view s = data_.substr(0, *n);
    data_.remove_prefix(*n);
    return s;
  }
  bool done() const { return data_.empty(); }

 private:
  std::nullopt_t bad() {
    data_ = {};
    return std::nullopt;
  }
  std::string_view data_;
};

void putU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

void putString(std::string& out, std::string_view s) {
  putU32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

std::string failure() { return std::string(1, static_cast<char>(kFailure)); }

/// Reads one length-prefixed message (at most kMaxAgentMessage) from `fd`.
/// Errors: end of stream ("" message), a read error, an oversized length.
Result<std::string> readMessage(int fd) {
  unsigned char header[4];
  ssize_t n = readFull(fd, header, sizeof header);
  if (n == 0) return fail("");
  if (n != 4) return fail("the stream ended inside a message");
  const uint32_t length =
      (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) | uint32_t{header[3]};
  if (length == 0 || length > kMaxAgentMessage)
    return fail("a message of {} bytes (the most is {})", length, kMaxAgentMessage);
  std::string message(length, '\0');
  if (readFull(fd, message.data(), length) != static_cast<ssize_t>(length))
    return fail("the stream ended inside a message");
  return message;
}

bool writeMessage(int fd, std::string_view message) {
  std::string framed;
  putU32(framed, static_cast<uint32_t>(message.size()));
  framed += message;
  return writeAll(fd, framed);
}

/// The user and the server's host key of an SSH login (RFC 4252 section 7:
/// session id, SSH_MSG_USERAUTH_REQUEST, user, "ssh-connection",
/// "publickey", TRUE, algorithm, the key; OpenSSH's hostbound method adds the
/// server's host key) signed with `keyBlob`, or nothing when `data` is
/// anything else.
std::optional<SshLoginRequest> parseLogin(std::string_view data, std::string_view keyBlob) {
  WireReader r(data);
  auto session = r.string();
  if (!session || session->size() < kMinSessionId || session->size() > kMaxSessionId) return std::nullopt;
  if (r.byte() != kUserauthRequest) return std::nullopt;
  auto user = r.string();
  auto service = r.string();
  auto method = r.string();
  if (!user || !plainUserName(*user) || service != "ssh-connection" || !method) return std::nullopt;
  const bool hostbound = *method == "publickey-hostbound-v00@openssh.com";
  if (!hostbound && *method != "publickey") return std::nullopt;
  if (r.byte() != 1) return std::nullopt;
  auto algorithm = r.string();
  auto key = r.string();
  if (!algorithm || algorithm->empty() || key != keyBlob) return std::nullopt;
  SshLoginRequest login{sshFingerprint(keyBlob), std::string(*user), ""};
  if (hostbound) {
    auto hostKey = r.string();
    if (!hostKey || hostKey->empty()) return std::nullopt;
    login.hostKeyFingerprint = sshFingerprint(*hostKey);
  }
  if (!r.done()) return std::nullopt;
  return login;
}

}  // namespace

std::string sshFingerprint(std::string_view keyBlob) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(keyBlob.data()), keyBlob.size(), digest);
  std::string b64 = base64Encode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  return "SHA256:" + b64;
}

bool isSshFingerprint(std::string_view text) {
  if (!text.starts_with("SHA256:") || text.size() != 7 + 43) return false;
  return std::all_of(text.begin() + 7, text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
  });
}

Result<Fd> connectSshAgent(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) return fail("the SSH agent socket '{}' is not usable", path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fail("cannot create a socket: {}", errnoText(errno));
  // A stuck agent must not hold the guest's request (or the session's stop) forever.
  timeval timeout{kAgentTimeoutSeconds, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail("cannot reach the SSH agent at {}: {}", path, errnoText(errno));
  return fd;
}

namespace {

/// The public key blobs the agent at `agent` holds, in its order (their
/// comments are not kept). Errors: it does not answer, or not as an agent.
Result<std::vector<std::string>> agentKeyBlobs(int agent) {
  if (!writeMessage(agent, std::string(1, static_cast<char>(kRequestIdentities))))
    return fail("cannot ask the SSH agent for its keys: {}", errnoText(errno));
  auto reply = readMessage(agent);
  if (!reply || reply->empty() || static_cast<uint8_t>((*reply)[0]) != kIdentitiesAnswer)
    return fail("the SSH agent did not list its keys");
  WireReader r(std::string_view(*reply).substr(1));
  auto count = r.u32();
  if (!count) return fail("the SSH agent's list of keys is malformed");
  std::vector<std::string> blobs;
  for (uint32_t i = 0; i < *count; ++i) {
    auto blob = r.string();
    auto comment = r.string();
    if (!blob || !comment) return fail("the SSH agent's list of keys is malformed");
    blobs.emplace_back(*blob);
  }
  return blobs;
}

}  // namespace

Result<std::vector<std::string>> agentFingerprints(Fd agent) {
  auto blobs = agentKeyBlobs(agent.get());
  if (!blobs) return std::unexpected(blobs.error());
  std::vector<std::string> out;
  for (const auto& blob : *blobs) out.push_back(sshFingerprint(blob));
  return out;
}

bool SshAgentFilter::withinRate() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(recentLogins_, [&](auto t) { return now - t > std::chrono::minutes(1); });
  if (recentLogins_.size() >= kMaxLoginsPerMinute) {
    if (!rateLogged_) log(fmt::format("refusing logins: over {} in a minute", kMaxLoginsPerMinute));
    rateLogged_ = true;
    return false;
  }
  rateLogged_ = false;
  recentLogins_.push_back(now);
  return true;
}

void SshAgentFilter::log(const std::string& line) const {
  if (options_.log) options_.log("ssh-agent: " + line);
}

std::optional<std::string> SshAgentFilter::identities() {
  auto agent = options_.connectAgent();
  if (!agent) {
    log(agent.error().message);
    return std::nullopt;
  }
  auto blobs = agentKeyBlobs(agent->get());
  if (!blobs) return std::nullopt;
  std::string kept;
  uint32_t keptCount = 0;
  for (const auto& blob : *blobs) {
    const std::string fingerprint = sshFingerprint(blob);
    if (std::find(options_.fingerprints.begin(), options_.fingerprints.end(), fingerprint) ==
        options_.fingerprints.end())
      continue;
    putString(kept, blob);
    putString(kept, fingerprint);
    ++keptCount;
  }
  std::string answer(1, static_cast<char>(kIdentitiesAnswer));
  putU32(answer, keptCount);
  return answer + kept;
}

std::string SshAgentFilter::sign(std::string_view contents) {
  WireReader r(contents);
  auto keyBlob = r.string();
  auto data = r.string();
  auto flags = r.u32();
  if (!keyBlob || !data || !flags || !r.done()) {
    log("refused a malformed sign request");
    return failure();
  }
  const std::string fingerprint = sshFingerprint(*keyBlob);
  if (std::find(options_.fingerprints.begin(), options_.fingerprints.end(), fingerprint) ==
      options_.fingerprints.end()) {
    log(fmt::format("refused to sign with {}: not a key listed with --git-ssh-key", fingerprint));
    return failure();
  }
  auto login = parseLogin(*data, *keyBlob);
  if (!login || (*flags & ~kLoginSignFlags) != 0) {
    log(fmt::format("refused to sign with {}: the data is not an SSH login (only logins are signed)", fingerprint));
    return failure();
  }
  const std::string who =
      fmt::format("a login as {} with {}{}", login->user, fingerprint,
                  login->hostKeyFingerprint.empty() ? "" : " to host key " + login->hostKeyFingerprint);
  if (!login->hostKeyFingerprint.empty() && !options_.hostKeys.empty() &&
      std::find(options_.hostKeys.begin(), options_.hostKeys.end(), login->hostKeyFingerprint) ==
          options_.hostKeys.end()) {
    log(
        fmt::format("refused to sign {}: that server is not a git host (its key is in no known_hosts line given to "
                    "the VM)",
                    who));
    return failure();
  }
  if (!withinRate()) return failure();
  auto cancelled = [this] {
    pollfd p{port_, POLLRDHUP, 0};
    return port_ >= 0 && ::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) != 0;
  };
  if (options_.confirm && !options_.confirm(*login, cancelled)) {
    log("not confirmed: " + who);
    return failure();
  }
  auto agent = options_.connectAgent();
  if (!agent) {
    log(agent.error().message);
    return failure();
  }
  std::string request(1, static_cast<char>(kSignRequest));
  request += contents;
  if (!writeMessage(agent->get(), request)) {
    log(fmt::format("could not ask the host's agent to sign {}: {}", who, errnoText(errno)));
    return failure();
  }
  auto reply = readMessage(agent->get());
  if (!reply || reply->empty() || static_cast<uint8_t>((*reply)[0]) != kSignResponse) {
    log("the host's agent did not sign " + who);
    return failure();
  }
  log("signed " + who);
  return std::move(*reply);
}

std::string SshAgentFilter::answer(std::string_view request) {
  if (request.empty()) return failure();
  const uint8_t type = static_cast<uint8_t>(request[0]);
  if (type == kRequestIdentities && request.size() == 1) {
    auto answer = identities();
    if (answer) return *answer;
    log("could not list the host agent's keys");
    return failure();
  }
  if (type == kSignRequest) return sign(request.substr(1));
  return failure();
}

void SshAgentFilter::serve(int fd) {
  port_ = fd;
  for (;;) {
    auto request = readMessage(fd);
    if (!request) {
      if (!request.error().message.empty()) log("stopped serving the VM: " + request.error().message);
      return;
    }
    if (!writeMessage(fd, answer(*request))) return;
  }
}

}  // namespace airlock::secrets
