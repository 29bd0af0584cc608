// The --git-ssh-agent filter against a real OpenSSH ssh-agent holding two
// keys, with OpenSSH's own clients (ssh-add, ssh-keygen -Y sign) as the
// hostile guest: only the listed key is seen, only SSH logins are signed,
// nothing else (removing keys, signing a git commit) goes through.

#include "secrets/ssh_agent_filter.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/encoding.h"

namespace airlock::secrets {
namespace {

const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

/// Runs a shell command; its stdout and whether it exited 0.
std::pair<std::string, bool> sh(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {"", false};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return {out, WIFEXITED(status) && WEXITSTATUS(status) == 0};
}

void putU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}
void putString(std::string& out, std::string_view s) {
  putU32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

/// An SSH login's signed data (RFC 4252 section 7) for `keyBlob`.
std::string loginData(std::string_view keyBlob, std::string_view user = "git", std::string_view hostKey = "") {
  std::string d;
  putString(d, std::string(32, 'S'));  // a SHA-256 exchange hash
  d += static_cast<char>(50);
  putString(d, user);
  putString(d, "ssh-connection");
  putString(d, hostKey.empty() ? "publickey" : "publickey-hostbound-v00@openssh.com");
  d += static_cast<char>(1);
  putString(d, "ssh-ed25519");
  putString(d, keyBlob);
  if (!hostKey.empty()) putString(d, hostKey);
  return d;
}

std::string signRequest(std::string_view keyBlob, std::string_view data, uint32_t flags = 0) {
  std::string r(1, static_cast<char>(13));
  putString(r, keyBlob);
  putString(r, data);
  putU32(r, flags);
  return r;
}

class SshAgentFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-sshagent-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* k : {"a", "b"})
      ASSERT_TRUE(sh("ssh-keygen -q -t ed25519 -N '' -C key-" + std::string(k) + " -f " + dir_ + "/" + k).second);
    auto started = sh("ssh-agent -s -a " + dir_ + "/agent.sock");
    ASSERT_TRUE(started.second) << "ssh-agent (openssh-client) is needed";
    auto at = started.first.find("SSH_AGENT_PID=");
    ASSERT_NE(at, std::string::npos);
    agentPid_ = std::atoi(started.first.c_str() + at + 14);
    ASSERT_TRUE(sh(real() + "ssh-add -q " + dir_ + "/a " + dir_ + "/b 2>&1").second);
    fingerprintA_ = sh("ssh-keygen -lf " + dir_ + "/a.pub | cut -d' ' -f2").first;
    fingerprintB_ = sh("ssh-keygen -lf " + dir_ + "/b.pub | cut -d' ' -f2").first;
    blobA_ = *base64Decode(sh("cut -d' ' -f2 " + dir_ + "/a.pub").first);
    blobB_ = *base64Decode(sh("cut -d' ' -f2 " + dir_ + "/b.pub").first);
  }
  void TearDown() override {
    stopListening();
    if (agentPid_ > 0) ::kill(agentPid_, SIGTERM);
    sh("rm -rf " + dir_);
  }

  std::string real() const { return "SSH_AUTH_SOCK=" + dir_ + "/agent.sock "; }
  std::string filtered() const { return "SSH_AUTH_SOCK=" + dir_ + "/filtered.sock "; }

  SshAgentFilterOptions options() {
    SshAgentFilterOptions o;
    o.fingerprints = {fingerprintA_};
    o.connectAgent = [path = dir_ + "/agent.sock"] { return connectSshAgent(path); };
    o.log = [this](const std::string& line) {
      std::lock_guard lock(logMutex_);
      log_ += line + "\n";
    };
    return o;
  }
  std::string log() {
    std::lock_guard lock(logMutex_);
    return log_;
  }

  /// Serves `filter` on dir/filtered.sock, one client at a time (as the
  /// guest's relay does over the port).
  void listen(SshAgentFilter& filter) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = dir_ + "/filtered.sock";
    std::strcpy(addr.sun_path, path.c_str());
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener_.get(), 8), 0);
    server_ = std::thread([this, &filter] {
      for (;;) {
        Fd client(::accept(listener_.get(), nullptr, nullptr));
        if (!client) return;
        filter.serve(client.get());
      }
    });
  }
  void stopListening() {
    if (listener_) ::shutdown(listener_.get(), SHUT_RDWR);
    if (server_.joinable()) server_.join();
    listener_.reset();
  }

  std::string dir_;
  pid_t agentPid_ = -1;
  std::string fingerprintA_, fingerprintB_, blobA_, blobB_;
  Fd listener_;
  std::thread server_;
  std::mutex logMutex_;
  std::string log_;
};

TEST_F(SshAgentFilterTest, FingerprintsAreOpenSshs) {
  EXPECT_EQ(sshFingerprint(blobA_), fingerprintA_);
  EXPECT_TRUE(isSshFingerprint(fingerprintA_));
  EXPECT_FALSE(isSshFingerprint("MD5:aa:bb"));
  EXPECT_FALSE(isSshFingerprint(fingerprintA_.substr(0, 40)));
  EXPECT_FALSE(isSshFingerprint(fingerprintA_ + "x"));
}

TEST_F(SshAgentFilterTest, TheGuestSeesOnlyTheListedKey) {
  SshAgentFilter filter(options());
  listen(filter);
  auto realList = sh(real() + "ssh-add -l");
  ASSERT_NE(realList.first.find(fingerprintB_), std::string::npos) << "the host agent holds both keys";
  auto seen = sh(filtered() + "ssh-add -l");
  EXPECT_TRUE(seen.second);
  EXPECT_NE(seen.first.find(fingerprintA_), std::string::npos) << seen.first;
  EXPECT_EQ(seen.first.find(fingerprintB_), std::string::npos) << seen.first;
  EXPECT_EQ(seen.first.find("key-a"), std::string::npos) << "the host's comment (user@machine) stays on the host";
}

TEST_F(SshAgentFilterTest, TheGuestCannotRemoveAddOrLockKeys) {
  SshAgentFilter filter(options());
  listen(filter);
  EXPECT_FALSE(sh(filtered() + "ssh-add -D 2>/dev/null").second);
  EXPECT_FALSE(sh(filtered() + "ssh-add -d " + dir_ + "/a.pub 2>/dev/null").second);
  EXPECT_FALSE(
      sh("ssh-keygen -q -t ed25519 -N '' -f " + dir_ + "/c && " + filtered() + "ssh-add " + dir_ + "/c 2>/dev/null")
          .second);
  // Locking (ssh-add -x, which asks /dev/tty for a password): the request itself.
  std::string lock(1, '\x16');  // SSH_AGENTC_LOCK
  putString(lock, "password");
  EXPECT_EQ(filter.answer(lock), std::string(1, '\x05'));
  auto left = sh(real() + "ssh-add -l").first;
  EXPECT_NE(left.find(fingerprintA_), std::string::npos);
  EXPECT_NE(left.find(fingerprintB_), std::string::npos);
}

TEST_F(SshAgentFilterTest, AGitCommitSignatureIsRefused) {
  SshAgentFilter filter(options());
  listen(filter);
  ASSERT_TRUE(sh("echo commit > " + dir_ + "/msg").second);
  // The same request straight to the host agent works: the refusal is the filter's.
  ASSERT_TRUE(sh(real() + "ssh-keygen -Y sign -f " + dir_ + "/a.pub -n git " + dir_ + "/msg 2>/dev/null").second);
  sh("rm -f " + dir_ + "/msg.sig");
  EXPECT_FALSE(sh(filtered() + "ssh-keygen -Y sign -f " + dir_ + "/a.pub -n git " + dir_ + "/msg 2>/dev/null").second);
  EXPECT_NE(log().find("the data is not an SSH login"), std::string::npos) << log();
}

TEST_F(SshAgentFilterTest, ALoginWithTheListedKeyIsSigned) {
  SshAgentFilter filter(options());
  std::string reply = filter.answer(signRequest(blobA_, loginData(blobA_)));
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(static_cast<uint8_t>(reply[0]), 14) << "SSH_AGENT_SIGN_RESPONSE";
  EXPECT_NE(log().find("signed a login as git with " + fingerprintA_), std::string::npos) << log();
}

TEST_F(SshAgentFilterTest, ALoginWithAnUnlistedKeyIsRefused) {
  SshAgentFilter filter(options());
  EXPECT_EQ(filter.answer(signRequest(blobB_, loginData(blobB_))), std::string(1, '\x05'));
  EXPECT_NE(log().find("not a key listed with --git-ssh-key"), std::string::npos) << log();
}

TEST_F(SshAgentFilterTest, LoginLookalikesAreRefused) {
  SshAgentFilter filter(options());
  const std::string failure(1, '\x05');
  EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobA_) + "x")), failure) << "trailing bytes";
  EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobB_))), failure) << "another key in the login";
  EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobA_), 0x10)), failure) << "unknown flags";
  std::string shortSession = loginData(blobA_);
  shortSession.replace(0, 36, std::string("\0\0\0\x04SSSS", 8));
  EXPECT_EQ(filter.answer(signRequest(blobA_, shortSession)), failure) << "not an exchange hash";
  std::string password = loginData(blobA_);
  const auto at = password.find("publickey");
  password.replace(at - 4, 13, std::string("\0\0\0\x08password", 12));
  EXPECT_EQ(filter.answer(signRequest(blobA_, password)), failure) << "another method";
  EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobA_)).substr(0, 20)), failure) << "truncated";
  EXPECT_EQ(filter.answer(std::string(1, '\x1b')), failure) << "extensions";
  EXPECT_EQ(filter.answer(""), failure);
  EXPECT_EQ(log().find("signed a login"), std::string::npos) << log();
}

TEST_F(SshAgentFilterTest, ConfirmationDecidesAndSeesTheServer) {
  auto o = options();
  std::vector<SshLoginRequest> asked;
  bool allow = false;
  o.confirm = [&](const SshLoginRequest& r, const std::function<bool()>&) {
    asked.push_back(r);
    return allow;
  };
  SshAgentFilter filter(std::move(o));
  const std::string hostKey = blobB_;  // any key blob stands for the server's
  EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobA_, "git", hostKey))), std::string(1, '\x05'));
  allow = true;
  std::string reply = filter.answer(signRequest(blobA_, loginData(blobA_, "git", hostKey)));
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(static_cast<uint8_t>(reply[0]), 14);
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].user, "git");
  EXPECT_EQ(asked[0].fingerprint, fingerprintA_);
  EXPECT_EQ(asked[0].hostKeyFingerprint, fingerprintB_);
  EXPECT_NE(log().find("not confirmed: a login as git"), std::string::npos) << log();
}

// A login that names its server (OpenSSH's host-bound method) is signed only
// for a git host's key; a plain one names none and cannot be checked.
TEST_F(SshAgentFilterTest, ALoginToAServerThatIsNotAGitHostIsRefused) {
  auto o = options();
  o.hostKeys = {fingerprintB_};  // B's blob stands for the git host's key
  SshAgentFilter filter(std::move(o));
  std::string toGitHost = filter.answer(signRequest(blobA_, loginData(blobA_, "git", blobB_)));
  ASSERT_FALSE(toGitHost.empty());
  EXPECT_EQ(static_cast<uint8_t>(toGitHost[0]), 14);
  EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobA_, "git", blobA_))), std::string(1, '\x05'));
  EXPECT_NE(log().find("that server is not a git host"), std::string::npos) << log();
}

TEST_F(SshAgentFilterTest, OnlyPlainUserNamesAreSigned) {
  SshAgentFilter filter(options());
  const std::string failure(1, '\x05');
  for (const std::string& user :
       {std::string(65, 'a'), std::string("git\x1b[2J"), std::string("git\nsigned a login as root"), std::string(""),
        std::string(200 * 1024, '\x1b')})
    EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobA_, user))), failure) << user.size();
  EXPECT_EQ(log().find("signed a login"), std::string::npos) << log();
  EXPECT_LT(log().size(), 4096u) << "a guest's user name does not reach the log";
  std::string ok = filter.answer(signRequest(blobA_, loginData(blobA_, "first.last+ci@example-1_x")));
  ASSERT_FALSE(ok.empty());
  EXPECT_EQ(static_cast<uint8_t>(ok[0]), 14);
}

TEST_F(SshAgentFilterTest, LoginsBeyondTheRateAreRefusedAndLoggedOnce) {
  SshAgentFilter filter(options());
  size_t signed_ = 0;
  for (size_t i = 0; i < kMaxLoginsPerMinute + 10; ++i) {
    std::string reply = filter.answer(signRequest(blobA_, loginData(blobA_)));
    signed_ += !reply.empty() && static_cast<uint8_t>(reply[0]) == 14;
  }
  EXPECT_EQ(signed_, kMaxLoginsPerMinute);
  const std::string text = log();
  const auto first = text.find("refusing logins: over 30 in a minute");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("refusing logins", first + 1), std::string::npos) << "logged once";
}

TEST_F(SshAgentFilterTest, AConfirmationStopsWhenTheStreamEnds) {
  auto o = options();
  std::atomic<bool> sawCancel = false;
  o.confirm = [&](const SshLoginRequest&, const std::function<bool()>& cancelled) {
    for (int i = 0; i < 500 && !cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    sawCancel = cancelled();
    return true;  // ignored: the session is gone
  };
  SshAgentFilter filter(std::move(o));
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  Fd guest(pair[0]), port(pair[1]);
  std::thread server([&] { filter.serve(port.get()); });
  std::string request = signRequest(blobA_, loginData(blobA_));
  std::string framed;
  putU32(framed, static_cast<uint32_t>(request.size()));
  ASSERT_TRUE(writeAll(guest.get(), framed + request));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::shutdown(port.get(), SHUT_RDWR);  // what QemuVm::stopServices() does
  server.join();
  EXPECT_TRUE(sawCancel);
}

TEST_F(SshAgentFilterTest, AnOversizedOrCutMessageEndsTheStream) {
  SshAgentFilter filter(options());
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  Fd guest(pair[0]), port(pair[1]);
  std::thread server([&] { filter.serve(port.get()); });
  std::string huge;
  putU32(huge, kMaxAgentMessage + 1);
  ASSERT_TRUE(writeAll(guest.get(), huge));
  server.join();
  EXPECT_NE(log().find("stopped serving the VM: a message of 262145 bytes"), std::string::npos) << log();
  // A message cut by the end of the stream.
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  Fd guest2(pair[0]), port2(pair[1]);
  std::thread server2([&] { filter.serve(port2.get()); });
  std::string cut;
  putU32(cut, 100);
  ASSERT_TRUE(writeAll(guest2.get(), cut + "\x0b"));
  guest2.reset();
  server2.join();
  EXPECT_NE(log().find("stopped serving the VM: the stream ended inside a message"), std::string::npos) << log();
}

TEST_F(SshAgentFilterTest, AnUnreachableHostAgentIsAFailureNotACrash) {
  auto o = options();
  o.connectAgent = [this] { return connectSshAgent(dir_ + "/nobody.sock"); };
  SshAgentFilter filter(std::move(o));
  EXPECT_EQ(filter.answer(std::string(1, '\x0b')), std::string(1, '\x05'));
  EXPECT_EQ(filter.answer(signRequest(blobA_, loginData(blobA_))), std::string(1, '\x05'));
  EXPECT_NE(log().find("cannot reach the SSH agent at"), std::string::npos) << log();
}

}  // namespace
}  // namespace airlock::secrets
