#include "egress/address_book.h"

#include <algorithm>

namespace airlock::egress {

AddressBook::AddressBook(std::chrono::seconds floor, std::chrono::seconds ceiling,
                         std::function<Clock::time_point()> now)
    : floor_(floor), ceiling_(std::max(floor, ceiling)), now_(std::move(now)) {}

uint32_t AddressBook::record(const std::string& name, const IpAddress& address, uint32_t ttl) {
  auto clamped = std::clamp(std::chrono::seconds(ttl), floor_, ceiling_);
  std::lock_guard lock(mutex_);
  auto& expiry = entries_[address][name];
  expiry = std::max(expiry, now_() + clamped);
  return static_cast<uint32_t>(clamped.count());
}

std::vector<std::string> AddressBook::namesFor(const IpAddress& address) const {
  std::vector<std::string> names;
  auto now = now_();
  std::lock_guard lock(mutex_);
  auto it = entries_.find(address);
  if (it == entries_.end()) return names;
  for (const auto& [name, expiry] : it->second)
    if (expiry > now) names.push_back(name);
  return names;
}

}  // namespace airlock::egress
