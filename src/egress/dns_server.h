#pragma once
// The DNS proxy's sockets: UDP port 53 on the gateway addresses inside the
// session namespace, served by one thread through a DnsAnswerer.

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/fd.h"
#include "egress/dns_answerer.h"
#include "egress/netns.h"

namespace airlock::egress {

/// One line per event for the egress log.
using EgressLogFn = std::function<void(const std::string&)>;

class DnsServer {
 public:
  /// Binds kGatewayV4:53 and [kGatewayV6]:53 in `netns` and starts serving.
  /// `answerer` and `log` must outlive the server. Errors carry kEgress.
  static Result<std::unique_ptr<DnsServer>> start(const NetNamespace& netns, DnsAnswerer& answerer, EgressLogFn log);
  ~DnsServer();
  DnsServer(const DnsServer&) = delete;
  DnsServer& operator=(const DnsServer&) = delete;

 private:
  DnsServer(DnsAnswerer& answerer, EgressLogFn log) : answerer_(answerer), log_(std::move(log)) {}
  void serve();
  DnsAnswerer& answerer_;
  EgressLogFn log_;
  Fd v4_, v6_, stopRead_, stopWrite_;
  std::thread thread_;
};

}  // namespace airlock::egress
