#pragma once
// The one way a verb fails: one `airlock: MESSAGE` line on stderr and the
// error's exit code (common/exit_codes.h).

#include <cstdio>

#include "common/error.h"

namespace airlock::cli {

/// Prints `e` as one line and returns its exit code.
inline int reportError(const Error& e) {
  std::fprintf(stderr, "airlock: %s\n", e.message.c_str());
  return e.code;
}

}  // namespace airlock::cli
