#include "common/subordinate_ids.h"

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

}  // namespace

std::optional<SubordinateRange> findSubordinateRange(const std::string& file, const std::string& user, uid_t uid,
                                                     uint64_t minCount) {
  const std::string uidText = std::to_string(uid);
  std::string_view rest = file;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view who = line.substr(0, first);
    if (who != uidText && (user.empty() || who != user)) continue;
    auto start = parseDecimal(line.substr(first + 1, second - first - 1));
    auto count = parseDecimal(line.substr(second + 1));
    if (start && count && *count >= minCount && *count > 0) return SubordinateRange{*start, *count};
  }
  return std::nullopt;
}

}  // namespace airlock
