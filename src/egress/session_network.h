#pragma once
// One session's network: a private namespace with the guest's tap, the
// nftables ruleset, the DNS proxy and the egress proxy. Everything lives as
// long as this object (and QEMU's copy of the tap fd); nothing is left on
// the host.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fd.h"
#include "egress/address_book.h"
#include "egress/blocked_log.h"
#include "egress/dns_answerer.h"
#include "egress/dns_server.h"
#include "egress/egress_proxy.h"
#include "egress/ip_address.h"
#include "egress/netns.h"
#include "egress/policy.h"
#include "egress/udp_upstream.h"

namespace airlock::egress {

struct NetworkOptions {
  /// Upstream resolver; default: the first nameserver of /etc/resolv.conf.
  std::optional<IpAddress> resolver;
  uint16_t resolverPort = 53;
  std::chrono::seconds ttlFloor{30};     ///< shortest time an answered address stays allowed
  std::chrono::seconds ttlCeiling{3600}; ///< longest
  std::string logPath;                   ///< per-session egress log file ("" = none)
  /// Guest TCP connections the egress proxy handles at once; beyond it new
  /// ones are refused (and listed by blocked()).
  int maxConnections = EgressProxy::kDefaultMaxConnections;
  /// Host-side services at gateway ports (the credential broker, the MCP proxy).
  std::map<uint16_t, GatewayService> gatewayServices;
  /// Appends a line to the session log, for the gateway services; may be empty.
  EgressLogFn sessionLog;
};

class SessionNetwork {
 public:
  /// Creates the namespace, the tap with the gateway addresses, loads the
  /// ruleset and starts both proxies. Errors carry kEgress and name what is
  /// missing.
  static Result<std::unique_ptr<SessionNetwork>> start(Policy policy, NetworkOptions options = {});
  ~SessionNetwork();

  /// The tap fd to hand to QEMU (VmConfig::tapFd).
  int tapFd() const { return tap_.get(); }
  const NetNamespace& netns() const { return netns_; }
  const Policy& policy() const { return policy_; }
  /// Packet counts of the firewall's drop counters.
  Result<std::map<std::string, uint64_t>> dropCounters() const;
  /// What the DNS proxy and the egress proxy refused so far, aggregated
  /// (what, reason) with counts, most frequent first. Thread-safe; usable
  /// while the session runs and after stopEgressProxy().
  std::vector<BlockedEntry> blocked() const { return blocked_->entries(); }
  /// Appends a line to the session's egress log (for host-side services
  /// that are not at a gateway port, like the SSH agent filter).
  const EgressLogFn& log() const { return log_; }
  /// Stops the egress proxy: every new guest connection is refused from now
  /// on (what happens when the proxy dies; for tests).
  void stopEgressProxy() { proxy_.reset(); }

 private:
  SessionNetwork(NetNamespace netns, Policy policy) : netns_(std::move(netns)), policy_(std::move(policy)) {}
  NetNamespace netns_;
  Fd tap_;
  Policy policy_;
  EgressLogFn log_;
  std::shared_ptr<AddressBook> book_;
  std::shared_ptr<BlockedLog> blocked_ = std::make_shared<BlockedLog>();
  std::unique_ptr<UdpUpstream> upstream_;
  std::unique_ptr<DnsAnswerer> answerer_;
  std::unique_ptr<DnsServer> dns_;
  std::unique_ptr<EgressProxy> proxy_;
};

}  // namespace airlock::egress
