#pragma once
// Raw protocol bytes for the egress VM tests: what a guest sends with busybox
// printf | nc when no client tool of its own speaks the protocol.

#include <cstdint>
#include <cstdio>
#include <string>

namespace airlock::test {

/// `bytes` as a busybox printf format (octal escapes), for raw protocol bytes.
inline std::string printfEscaped(const std::string& bytes) {
  std::string out;
  char buf[8];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "\\%03o", c);
    out += buf;
  }
  return out;
}

inline std::string u16(size_t v) { return std::string{static_cast<char>((v >> 8) & 0xff), static_cast<char>(v & 0xff)}; }

/// A minimal TLS 1.2 ClientHello record carrying the SNI `sni`.
inline std::string clientHello(const std::string& sni) {
  std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
  std::string list = u16(entry.size()) + entry;
  std::string ext = u16(0) + u16(list.size()) + list;
  std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string(1, '\0') + u16(2) +
                     std::string("\x13\x01", 2) + std::string("\x01\x00", 2) + u16(ext.size()) + ext;
  std::string hs = std::string(1, '\x01') + std::string(1, '\0') + u16(body.size()) + body;
  return std::string("\x16\x03\x01", 3) + u16(hs.size()) + hs;
}

/// A DNS query (id, recursion desired, one question of class IN), framed for TCP.
inline std::string framedDnsQuery(uint16_t id, const std::string& name, uint16_t qtype) {
  std::string q = u16(id) + u16(0x0100) + u16(1) + u16(0) + u16(0) + u16(0);
  size_t pos = 0;
  while (pos <= name.size()) {
    size_t dot = name.find('.', pos);
    if (dot == std::string::npos) dot = name.size();
    q += static_cast<char>(dot - pos);
    q += name.substr(pos, dot - pos);
    pos = dot + 1;
  }
  q += std::string(1, '\0') + u16(qtype) + u16(1);
  return u16(q.size()) + q;
}

}  // namespace airlock::test
