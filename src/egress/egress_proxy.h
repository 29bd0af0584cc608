#pragma once
// The egress proxy: accepts the guest TCP connections nftables redirects to
// kProxyPort in the session namespace and admits one only if
//  - its original destination is the gateway and the port is a --host-port
//    mapping (then it goes to the host's 127.0.0.1:PORT), or
//  - its original destination is the gateway and the port is one of the
//    session's gateway services (the credential broker), which then owns
//    the connection, or
//  - the profile is permissive, or
//  - the DNS proxy answered that address for an allowed name in this session,
//    the port is allowed for that name, and the TLS SNI (or HTTP Host) names it.
// Upstream connections are made from the host's namespace (the proxy's
// threads live there) and bytes are spliced both ways.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "common/fd.h"
#include "egress/address_book.h"
#include "egress/blocked_log.h"
#include "egress/dns_server.h"
#include "egress/netns.h"
#include "egress/policy.h"

namespace airlock::egress {

/// A host-side service the guest reaches at gateway:PORT (nothing else
/// reaches it): called on a connection thread with the guest's connection,
/// which it owns until it returns, the session's egress log, and its
/// session log (for what the service did for the guest; either log may be
/// a function that does nothing).
using GatewayService = std::function<void(Fd guest, const EgressLogFn& log, const EgressLogFn& sessionLog)>;

class EgressProxy {
 public:
  /// Default cap on connections handled at once (each holds a thread and two fds).
  static constexpr int kDefaultMaxConnections = 256;

  /// Listens on [::]:kProxyPort (dual stack) in `netns`. Connection threads
  /// share `book` and a copy of `policy` and `log`. In every profile a
  /// destination that isInternal() (loopback, private, link-local, v4-mapped
  /// ...) or one of `hostAddresses` (the host's own) is refused, unless it is
  /// the gateway with a --host-port mapping. Every refusal is added
  /// to `blocked` (may be null). At most `maxConnections` guest connections
  /// are handled at once; beyond that a new one is closed at once, logged
  /// and counted as blocked. `services`: gateway ports served on the host
  /// (they win over a --host-port mapping of the same port); `sessionLog`
  /// is given to them. Errors carry kEgress.
  static Result<std::unique_ptr<EgressProxy>> start(const NetNamespace& netns, Policy policy,
                                                    std::shared_ptr<const AddressBook> book,
                                                    std::set<IpAddress> hostAddresses, EgressLogFn log,
                                                    std::shared_ptr<BlockedLog> blocked = nullptr,
                                                    int maxConnections = kDefaultMaxConnections,
                                                    std::map<uint16_t, GatewayService> services = {},
                                                    EgressLogFn sessionLog = {});
  /// Stops accepting (new connections are refused: fail closed); connections
  /// in flight end with the session.
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  /// State shared with the connection threads (defined in the .cc).
  struct Shared;

 private:
  explicit EgressProxy(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  std::shared_ptr<Shared> shared_;
  std::thread acceptor_;
};

}  // namespace airlock::egress
