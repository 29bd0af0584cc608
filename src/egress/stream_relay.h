#pragma once
// TCP plumbing shared by the egress proxy and the port publisher: a
// connect with a timeout, and a two-way byte relay with splice(2) (no
// per-byte copies in user space).

#include <cstdint>

#include "common/fd.h"
#include "egress/ip_address.h"

namespace airlock::egress {

/// Connects to address:port from the calling thread's network namespace,
/// giving up after `timeoutMs`. Returns a blocking socket, or an empty Fd.
Fd connectTcp(const IpAddress& address, uint16_t port, int timeoutMs);

/// Relays bytes both ways between two connected sockets until both
/// directions reached EOF (each EOF is passed on as a half-close).
void relayBothWays(int a, int b);

}  // namespace airlock::egress
