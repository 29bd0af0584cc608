#pragma once
// The fixed addressing of a session's network: the tap in the session's
// namespace is the guest's gateway, resolver and (via the egress proxy) its
// only way out. airlock-init uses the same numbers (guest/boot.cc).

#include <cstdint>

namespace airlock::egress {

inline constexpr const char* kTapName = "airlock0";
inline constexpr const char* kGatewayV4 = "10.0.2.2";
inline constexpr const char* kGuestV4 = "10.0.2.15";
inline constexpr unsigned kPrefixV4 = 24;
inline constexpr const char* kGatewayV6 = "fd00:a1::1";
inline constexpr const char* kGuestV6 = "fd00:a1::15";
inline constexpr unsigned kPrefixV6 = 64;
/// Port the egress proxy listens on in the namespace; every guest TCP
/// connection is redirected here.
inline constexpr uint16_t kProxyPort = 15001;
/// The DNS proxy's port on the gateway addresses.
inline constexpr uint16_t kDnsPort = 53;

}  // namespace airlock::egress
