#include "common/subordinate_ids.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace airlock {
namespace {

/// A decimal number filling all of `text`.
std::optional<uint64_t> parseDecimal(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

/// Calls `fn(who, start, count)` for each well-formed line of `rest`.
template <typename Fn>
void forEachRange(std::string_view rest, Fn fn) {
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    auto start = parseDecimal(line.substr(first + 1, second - first - 1));
    auto count = parseDecimal(line.substr(second + 1));
    // Ids are 32 bits, and 2^32 - 1 is (uid_t)-1, never a valid id.
    constexpr uint64_t kLastId = 0xfffffffeull;
    if (!start || !count || *count == 0 || *start > kLastId || *count - 1 > kLastId - *start) continue;
    fn(line.substr(0, first), *start, *count);
  }
}

}  // namespace

std::optional<SubordinateRange> findSubordinateRange(const std::string& file, const std::string& user, uid_t uid,
                                                     uint64_t minCount) {
  const std::string uidText = std::to_string(uid);
  std::optional<SubordinateRange> found;
  forEachRange(file, [&](std::string_view who, uint64_t start, uint64_t count) {
    if (found || count < minCount || (who != uidText && (user.empty() || who != user))) return;
    found = SubordinateRange{start, count};
  });
  return found;
}

uint64_t firstFreeSubordinateId(const std::initializer_list<const std::string*>& files) {
  uint64_t next = 100000;
  for (const std::string* file : files)
    forEachRange(*file, [&](std::string_view, uint64_t start, uint64_t count) { next = std::max(next, start + count); });
  return next;
}

}  // namespace airlock
