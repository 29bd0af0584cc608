#pragma once
// The DNS proxy's message handling, independent of sockets: one guest query
// in, one response out. Allowed names are resolved through an Upstream and
// their A/AAAA answers (following CNAMEs) recorded in the AddressBook before
// the answer is returned; other names get NXDOMAIN (TXT/NULL/ANY: REFUSED);
// answers into internal ranges or the host's own addresses are dropped.

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "egress/address_book.h"
#include "egress/ip_address.h"
#include "egress/policy.h"

namespace airlock::egress {

/// Sends a DNS query (wire format) to the real resolver; returns its response.
class Upstream {
 public:
  virtual ~Upstream() = default;
  virtual Result<std::string> exchange(const std::string& query) = 0;
};

/// What the answerer did with one query (for the egress log and tests).
struct DnsOutcome {
  std::string name;           ///< question name, lower case, no trailing dot ("" if unparsable)
  std::string type;           ///< "A", "AAAA", "TXT", ...
  std::string verdict;        ///< "answered", "nxdomain", "refused", "nodata", "servfail", "dropped"
  std::vector<std::string> addresses;  ///< recorded addresses
  std::vector<std::string> rebinding;  ///< answers dropped as internal / the host's own
  /// Why the firewall refused (part of) this query, for the blocked summary
  /// ("" when nothing was refused: allowed names, upstream NXDOMAIN, ...).
  std::string blocked;
};

/// DnsOutcome::blocked reasons.
inline constexpr const char* kBlockedNotAllowed = "DNS name not on the allowlist";
inline constexpr const char* kBlockedTunnelType = "DNS TXT/NULL/ANY query for a name not on the allowlist (tunnel type)";
inline constexpr const char* kBlockedRebinding = "DNS answer into loopback/private/link-local or the host dropped (rebinding)";

class DnsAnswerer {
 public:
  /// `hostAddresses`: the host's own addresses, dropped like internal ranges.
  DnsAnswerer(const Policy& policy, AddressBook& book, Upstream& upstream, std::set<IpAddress> hostAddresses = {});

  /// Handles one query. An empty response means "send nothing" (garbage).
  std::string answer(std::string_view query, DnsOutcome* outcome = nullptr);

 private:
  const Policy& policy_;
  AddressBook& book_;
  Upstream& upstream_;
  std::set<IpAddress> hostAddresses_;
};

}  // namespace airlock::egress
