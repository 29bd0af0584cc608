#pragma once
// Error handling for airlock: every fallible function returns Result<T>.
// Exceptions are used only at the CLI boundary (see cli/main.cc).

#include <expected>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace airlock {

/// What went wrong, in one sentence that names the thing that failed and,
/// where there is one, the fix. `code` is an airlock exit code (see ExitCode).
struct Error {
  std::string message;
  int code = 1;
};

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
