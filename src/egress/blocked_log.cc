#include "egress/blocked_log.h"

#include <algorithm>

#include "common/visible_text.h"

namespace airlock::egress {

void BlockedLog::add(const std::string& what, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(visibleText(what), visibleText(reason));  // guest-chosen names, printed later
  auto it = counts_.find(key);
  if (it != counts_.end()) {
    ++it->second;
  } else if (counts_.size() < maxEntries_) {
    counts_.emplace(std::move(key), 1);
  } else {
    ++overflow_;
  }
}

std::vector<BlockedEntry> BlockedLog::entries() const {
  std::vector<BlockedEntry> out;
  uint64_t overflow;
  {
    std::lock_guard lock(mutex_);
    out.reserve(counts_.size() + 1);
    for (const auto& [key, count] : counts_) out.push_back({key.first, key.second, count});
    overflow = overflow_;
  }
  std::stable_sort(out.begin(), out.end(), [](const BlockedEntry& a, const BlockedEntry& b) { return a.count > b.count; });
  if (overflow) out.push_back({kOverflowWhat, kOverflowReason, overflow});
  return out;
}

}  // namespace airlock::egress
