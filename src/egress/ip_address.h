#pragma once
// An IPv4 or IPv6 address as bytes, and the ranges a guest must never be
// steered to by DNS (rebinding): loopback, private, link-local, shared,
// unique-local, multicast, unspecified, the metadata addresses.

#include <sys/socket.h>

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::egress {

struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  ///< IPv4 uses the first 4

  /// Parses dotted IPv4 or textual IPv6; nullopt otherwise.
  static std::optional<IpAddress> parse(std::string_view text);
  /// From 4 or 16 raw bytes (DNS A / AAAA rdata); nullopt for other sizes.
  static std::optional<IpAddress> fromBytes(const uint8_t* data, size_t size);
  std::string toString() const;
  /// Fills `out` with this address and `port` (host byte order) as a
  /// sockaddr_in or sockaddr_in6; returns its length for bind/connect.
  socklen_t toSockaddr(uint16_t port, sockaddr_storage& out) const;
  auto operator<=>(const IpAddress&) const = default;
};

/// Whether `address` is loopback, private (RFC 1918), link-local, shared
/// (100.64/10), unspecified, multicast, broadcast, IPv6 unique-local or
/// v4-mapped/compatible: never a legitimate answer for a public name.
bool isInternal(const IpAddress& address);

}  // namespace airlock::egress
