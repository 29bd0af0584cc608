#pragma once
// Error handling for airlock: every fallible function returns Result<T>.
// Exceptions are used only at the CLI boundary (see cli/main.cc).

#include <expected>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "common/exit_codes.h"

namespace airlock {

/// What went wrong, in one sentence that names the thing that failed and,
/// where there is one, the fix. `code` is an airlock exit code
/// (common/exit_codes.h); kInternal ("any other airlock failure") until a
/// caller that knows better classifies it (withCode()).
struct Error {
  std::string message;
  int code = exit_code::kInternal;
};

/// `e` with `code` when it is still unclassified (kInternal): how a caller
/// says what a failure of one of its steps means ("a failed snapshot is a
/// host problem").
inline Error withCode(Error e, int code) {
  if (e.code == exit_code::kInternal) e.code = code;
  return e;
}

template <typename T = void>
using Result = std::expected<T, Error>;

/// Builds an unexpected Error from a fmt format string.
template <typename... Args>
std::unexpected<Error> fail(fmt::format_string<Args...> f, Args&&... args) {
  return std::unexpected(Error{fmt::format(f, std::forward<Args>(args)...)});
}

/// Like fail(), with an explicit exit code.
template <typename... Args>
std::unexpected<Error> failWith(int code, fmt::format_string<Args...> f, Args&&... args) {
  return std::unexpected(Error{fmt::format(f, std::forward<Args>(args)...), code});
}

/// Formats errno as "<strerror> (errno N)".
std::string errnoText(int err);

}  // namespace airlock
