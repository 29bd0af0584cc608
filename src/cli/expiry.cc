#include "cli/expiry.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "common/exit_codes.h"

namespace airlock::cli {

Result<int64_t> parseExpiry(const std::string& text, int64_t now) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end) {
    tm = {};
    end = ::strptime(text.c_str(), "%Y-%m-%d", &tm);
  }
  const std::tm asGiven = tm;
  const int64_t t = end && !*end ? static_cast<int64_t>(::timegm(&tm)) : -1;
  if (t < 0 || tm.tm_mday != asGiven.tm_mday || tm.tm_mon != asGiven.tm_mon || tm.tm_year != asGiven.tm_year)
    return failWith(exit_code::kUsage,
                    "--expires takes a UTC date or time, 2026-12-31 or 2026-12-31T08:00:00Z (what "
                    "was given is not repeated, in case it was a token)");
  if (t <= now) return failWith(exit_code::kUsage, "--expires {} is in the past", text);
  return t;
}

std::string relativeTime(std::optional<int64_t> t, int64_t now) {
  if (!t) return "never";
  int64_t d = *t - now;
  bool future = d > 0;
  int64_t a = future ? d : -d;
  std::string span = a < 120      ? fmt::format("{} seconds", a)
                     : a < 7200   ? fmt::format("{} minutes", a / 60)
                     : a < 172800 ? fmt::format("{} hours", a / 3600)
                                  : fmt::format("{} days", a / 86400);
  return future ? "in " + span : span + " ago";
}

int64_t nowSeconds(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::seconds>(clock.now().time_since_epoch()).count();
}

}  // namespace airlock::cli
