#pragma once
// Expiry dates of stored secrets and logins: as given on the command line
// (`--expires`) and as shown ("in 5 days", "3 hours ago").

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/host_context.h"

namespace airlock::cli {

/// "2026-12-31" or "2026-12-31T08:00:00Z" (UTC) as Unix seconds. Errors
/// (64, naming --expires, never repeating `text`): another form, a day that does not exist
/// (2026-02-31), a time at or before `now` (Unix seconds).
Result<int64_t> parseExpiry(const std::string& text, int64_t now);

/// `t` (Unix seconds) against `now`: "in 5 days", "3 hours ago"; "never"
/// without a time.
std::string relativeTime(std::optional<int64_t> t, int64_t now);

/// `clock`'s now, in Unix seconds.
int64_t nowSeconds(const Clock& clock);
/// The host clock's now, in Unix seconds.
inline int64_t nowSeconds(const HostContext& host) { return nowSeconds(*host.clock); }

}  // namespace airlock::cli
