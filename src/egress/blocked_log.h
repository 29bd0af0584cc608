#pragma once
// What the session's firewall refused, aggregated for the end-of-session
// summary: one entry per (what, reason) with a count. Thread-safe (the DNS
// proxy and every egress proxy connection thread add to it).

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace airlock::egress {

/// One line of the blocked summary.
struct BlockedEntry {
  std::string what;    ///< a DNS name ("exfil.example.net") or a destination ("192.0.2.10:443 SNI other.example.com")
  std::string reason;  ///< why it was refused ("not on the allowlist", ...)
  uint64_t count = 0;  ///< how many times
  bool operator==(const BlockedEntry&) const = default;
};

class BlockedLog {
 public:
  /// At most `maxEntries` distinct (what, reason) pairs are kept, so a guest
  /// querying random names cannot grow the host's memory; later new pairs are
  /// counted in one overflow entry (kOverflowWhat).
  explicit BlockedLog(size_t maxEntries = 512) : maxEntries_(maxEntries) {}

  /// Counts one refusal; `what` and `reason` are kept escaped with
  /// visibleText() (a name the guest chose can hold terminal escapes).
  void add(const std::string& what, const std::string& reason);
  /// Entries by count (highest first), then what, then reason; the overflow
  /// entry (if any) last.
  std::vector<BlockedEntry> entries() const;

  static constexpr const char* kOverflowWhat = "(other)";
  static constexpr const char* kOverflowReason = "more distinct blocked entries than the summary keeps";

 private:
  size_t maxEntries_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;
  uint64_t overflow_ = 0;
};

}  // namespace airlock::egress
