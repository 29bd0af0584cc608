#pragma once
// The session's memory of what the DNS proxy answered: which allowed name
// an address was returned for, until when. The egress proxy admits a
// connection only to an address in the book. Thread-safe.

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "egress/ip_address.h"

namespace airlock::egress {

class AddressBook {
 public:
  using Clock = std::chrono::steady_clock;
  /// TTLs are clamped to [floor, ceiling]; `now` is injectable for tests.
  AddressBook(std::chrono::seconds floor, std::chrono::seconds ceiling,
              std::function<Clock::time_point()> now = Clock::now);

  /// Remembers that `name` resolved to `address` for `ttl` seconds (clamped).
  /// Returns the clamped TTL, which the DNS proxy passes on to the guest.
  uint32_t record(const std::string& name, const IpAddress& address, uint32_t ttl);
  /// Names `address` was answered for that have not expired.
  std::vector<std::string> namesFor(const IpAddress& address) const;

 private:
  std::chrono::seconds floor_, ceiling_;
  std::function<Clock::time_point()> now_;
  mutable std::mutex mutex_;
  std::map<IpAddress, std::map<std::string, Clock::time_point>> entries_;
};

}  // namespace airlock::egress
