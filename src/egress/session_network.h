#pragma once
// One session's network: a private namespace with the guest's tap and the
// nftables ruleset. Everything lives as long as this object (and QEMU's copy
// of the tap fd); nothing is left on the host.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/fd.h"
#include "egress/netns.h"
#include "egress/policy.h"

namespace airlock::egress {

class SessionNetwork {
 public:
  /// Creates the namespace, the tap with the gateway addresses, and loads
  /// the ruleset for `policy`. Errors carry kEgress and name what is missing.
  static Result<std::unique_ptr<SessionNetwork>> start(Policy policy);

  /// The tap fd to hand to QEMU (VmConfig::tapFd).
  int tapFd() const { return tap_.get(); }
  const NetNamespace& netns() const { return netns_; }
  const Policy& policy() const { return policy_; }
  /// Packet counts of the firewall's drop counters.
  Result<std::map<std::string, uint64_t>> dropCounters() const;

 private:
  SessionNetwork(NetNamespace netns, Fd tap, Policy policy)
      : netns_(std::move(netns)), tap_(std::move(tap)), policy_(std::move(policy)) {}
  NetNamespace netns_;
  Fd tap_;
  Policy policy_;
};

}  // namespace airlock::egress
