#pragma once
// libnftables in the current thread's network namespace (call inside
// NetNamespace::run): loading the session ruleset and reading its counters.

#include <cstdint>
#include <map>
#include <string>

#include "common/error.h"

namespace airlock::egress {

/// Loads `ruleset` (nft syntax) atomically. Errors carry kEgress and quote nft.
Result<> loadRuleset(const std::string& ruleset);

/// Packet counts of the named counters of table inet airlock.
Result<std::map<std::string, uint64_t>> readCounters();

}  // namespace airlock::egress
