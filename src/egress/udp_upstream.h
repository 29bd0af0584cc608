#pragma once
// The real resolver the DNS proxy asks: UDP to one server (the host's first
// nameserver from /etc/resolv.conf unless configured), from the thread's
// namespace (the host's, for the proxy's threads).

#include <chrono>
#include <string>

#include "egress/dns_answerer.h"
#include "egress/ip_address.h"

namespace airlock::egress {

class UdpUpstream : public Upstream {
 public:
  UdpUpstream(IpAddress server, uint16_t port = 53, std::chrono::milliseconds timeout = std::chrono::seconds(3))
      : server_(server), port_(port), timeout_(timeout) {}
  /// The first nameserver in `resolvConf`. Errors carry kEgress.
  static Result<IpAddress> nameserverFrom(const std::string& resolvConf = "/etc/resolv.conf");
  Result<std::string> exchange(const std::string& query) override;

 private:
  IpAddress server_;
  uint16_t port_;
  std::chrono::milliseconds timeout_;
};

}  // namespace airlock::egress
