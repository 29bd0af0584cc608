#include "egress/ip_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace airlock::egress {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  std::string s(text);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) return a;
  a.v6 = true;
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) return a;
  return std::nullopt;
}

socklen_t IpAddress::toSockaddr(uint16_t port, sockaddr_storage& out) const {
  out = {};
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&out);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    std::memcpy(&a->sin6_addr, bytes.data(), 16);
    return sizeof *a;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&out);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  std::memcpy(&a->sin_addr, bytes.data(), 4);
  return sizeof *a;
}

std::optional<IpAddress> IpAddress::fromBytes(const uint8_t* data, size_t size) {
  if (size != 4 && size != 16) return std::nullopt;
  IpAddress a;
  a.v6 = size == 16;
  std::memcpy(a.bytes.data(), data, size);
  return a;
}

std::string IpAddress::toString() const {
  char text[INET6_ADDRSTRLEN] = "";
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof text);
  return text;
}

bool isInternal(const IpAddress& a) {
  const auto& b = a.bytes;
  if (!a.v6) {
    return b[0] == 0 || b[0] == 10 || b[0] == 127 || (b[0] == 169 && b[1] == 254) ||
           (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168) ||
           (b[0] == 100 && (b[1] & 0xc0) == 64) || b[0] >= 224;
  }
  static const std::array<uint8_t, 16> zero{};
  bool firstTenZero = std::memcmp(b.data(), zero.data(), 10) == 0;
  return firstTenZero                        // ::, ::1, v4-compatible, v4-mapped (::ffff:0:0/96)
         || (b[0] & 0xfe) == 0xfc            // fc00::/7 unique local (fd00:ec2::254 included)
         || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)  // fe80::/10 link local
         || b[0] == 0xff                     // multicast
         || (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b);  // 64:ff9b::/96 NAT64
}

}  // namespace airlock::egress
