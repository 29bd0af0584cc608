// The client side of `airlock diff` on a running detached session.

#pragma once

#include <string>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::cli {

/// Asks the supervisor of the running detached session in `dir` (named
/// `name` in messages) to export its changes so far, and returns the
/// exported tar, opened and already unlinked from the session directory.
/// Errors carry the supervisor's exit code; exit_code::kBusy (or kUsage
/// when nothing listens) means the session is ending: wait for its end and
/// show what it then holds. A socket closed before any answer is "ending"
/// too (the supervisor resets connections it had not accepted when its loop
/// ended).
Result<Fd> exportRunningChanges(const std::string& dir, const std::string& name);

}  // namespace airlock::cli
