#include "egress/first_bytes.h"

#include <gtest/gtest.h>

namespace airlock::egress {
namespace {

using State = RequestedName::State;

/// A minimal TLS 1.2 ClientHello record carrying `sni` (empty: no SNI extension).
std::string clientHello(const std::string& sni) {
  auto u16 = [](size_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; };
  std::string ext;
  if (!sni.empty()) {
    std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
    std::string list = u16(entry.size()) + entry;
    ext = u16(0) + u16(list.size()) + list;
  }
  ext = u16(0x000b) + u16(2) + std::string("\x01\x00", 2) + ext;  // ec_point_formats first
  std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string(1, '\0') + u16(2) +
                     std::string("\x13\x01", 2) + std::string("\x01\x00", 2) + u16(ext.size()) + ext;
  std::string hs = std::string(1, '\x01') + std::string(1, '\0') + u16(body.size()) + body;
  return std::string("\x16\x03\x01", 3) + u16(hs.size()) + hs;
}

TEST(FirstBytesTest, TlsSniIsFound) {
  auto r = requestedName(clientHello("API.Example.com"));
  EXPECT_EQ(r.state, State::kFound);
  EXPECT_TRUE(r.tls);
  EXPECT_EQ(r.name, "api.example.com");
}

TEST(FirstBytesTest, TruncatedHelloAsksForMoreAndNoSniIsNone) {
  std::string hello = clientHello("api.example.com");
  EXPECT_EQ(requestedName(hello.substr(0, hello.size() - 3)).state, State::kIncomplete);
  EXPECT_EQ(requestedName(clientHello("")).state, State::kNone);
  std::string corrupt = hello;
  corrupt[5] = 2;  // not a client_hello
  EXPECT_EQ(requestedName(corrupt).state, State::kNone);
}

TEST(FirstBytesTest, HttpHostHeaderWithoutPort) {
  auto r = requestedName("GET / HTTP/1.1\r\nUser-Agent: x\r\nhost: Example.com:8080\r\n\r\n");
  EXPECT_EQ(r.state, State::kFound);
  EXPECT_FALSE(r.tls);
  EXPECT_EQ(r.name, "example.com");
  EXPECT_EQ(requestedName("GET / HTTP/1.1\r\nHost: exa").state, State::kIncomplete);
  EXPECT_EQ(requestedName("GET / HTTP/1.0\r\n\r\n").state, State::kNone);
}

// Found by fuzz/first_bytes_fuzz: "Host: ......" kept trailing dots after the
// one that is dropped, a name in no normal form. An empty label names no host.
TEST(FirstBytesTest, NameEndingInAnEmptyLabelIsNone) {
  auto http = requestedName("GET / HTTP/1.1\r\nHost: example.com..\r\n\r\n");
  EXPECT_EQ(http.state, State::kNone);
  EXPECT_EQ(http.name, "");
  EXPECT_EQ(requestedName(clientHello("api.example.com..")).state, State::kNone);
  EXPECT_EQ(requestedName(clientHello("api.example.com.")).name, "api.example.com");
}

TEST(SshIdentification, AClientsBannerAndNothingElse) {
  EXPECT_EQ(sshIdentification("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u6\r\n"), SshIdentification::kYes);
  EXPECT_EQ(sshIdentification(std::string_view("SSH-2.0-OpenSSH_9.2p1\r\n\0\0\x05\xdc", 27)), SshIdentification::kYes)
      << "the key exchange may follow in the same read";
  EXPECT_EQ(sshIdentification(""), SshIdentification::kIncomplete);
  EXPECT_EQ(sshIdentification("SSH-2"), SshIdentification::kIncomplete);
  EXPECT_EQ(sshIdentification("SSH-2.0-OpenSSH"), SshIdentification::kIncomplete);
  EXPECT_EQ(sshIdentification("SSH-2.0-x\r"), SshIdentification::kIncomplete);
  EXPECT_EQ(sshIdentification("GET / HTTP/1.1\r\n"), SshIdentification::kNo);
  EXPECT_EQ(sshIdentification("\x16\x03\x01"), SshIdentification::kNo) << "TLS";
  EXPECT_EQ(sshIdentification("SSH-1.99-old\r\n"), SshIdentification::kNo);
  EXPECT_EQ(sshIdentification("SSH-2.0-\r\n"), SshIdentification::kNo) << "no software version";
  EXPECT_EQ(sshIdentification("SSH-2.0-a\x1b[2Jb\r\n"), SshIdentification::kNo) << "not printable";
  EXPECT_EQ(sshIdentification("SSH-2.0-x\rX"), SshIdentification::kNo);
  EXPECT_EQ(sshIdentification("SSH-2.0-" + std::string(300, 'a')), SshIdentification::kNo) << "over 255 bytes";
  const std::string longest = "SSH-2.0-" + std::string(255 - 10, 'a') + "\r\n";
  EXPECT_EQ(longest.size(), 255u);
  EXPECT_EQ(sshIdentification(longest), SshIdentification::kYes) << "255 bytes, CR LF included";
  EXPECT_EQ(sshIdentification("SSH-2.0-" + std::string(255 - 9, 'a') + "\r\n"), SshIdentification::kNo) << "256";
}

}  // namespace
}  // namespace airlock::egress
