#pragma once
// The guest's side of the session network: a tap device in the current
// thread's network namespace (call it inside NetNamespace::run) with the
// gateway addresses of egress/addresses.h, plus loopback up.

#include "common/error.h"
#include "common/fd.h"

namespace airlock::egress {

/// Creates tap kTapName (/dev/net/tun, TUNSETIFF), brings it and lo up and
/// puts kGatewayV4/24 and kGatewayV6/64 on it. Returns the tap fd (close-on-
/// exec; pass it to QEMU with SpawnOptions::keepFds). Errors carry kEgress.
Result<Fd> createGatewayTap();

}  // namespace airlock::egress
