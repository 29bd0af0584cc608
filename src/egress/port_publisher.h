#pragma once
// `--publish HOSTPORT:GUESTPORT`: a TCP port on the host's 127.0.0.1 whose
// connections are joined to the guest's GUESTPORT, dialled from inside the
// session namespace (the guest never gets a route to the host for it).

#include <memory>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "egress/dns_server.h"
#include "egress/netns.h"
#include "egress/policy.h"

namespace airlock::egress {

class PortPublisher {
 public:
  /// Listens on 127.0.0.1:port.hostPort in the caller's namespace and joins
  /// each connection to the guest's port.guestPort. Errors carry kUsage
  /// (the host port is taken) or kEgress.
  static Result<std::unique_ptr<PortPublisher>> start(const NetNamespace& netns, HostPort port, EgressLogFn log);
  /// Stops accepting; connections in flight end with the session.
  ~PortPublisher();
  PortPublisher(const PortPublisher&) = delete;
  PortPublisher& operator=(const PortPublisher&) = delete;

 private:
  PortPublisher() = default;
  Fd listener_;
  Fd stop_;  ///< eventfd that ends the accept loop
  std::thread acceptor_;
};

}  // namespace airlock::egress
