#pragma once
// What `airlock run` and `airlock run-image` decide the same way from their
// flags and the host: the review mode (and whether there is a terminal for
// it), pty or pipes, -e/--env values, and the real sandbox launcher.

#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/host_context.h"
#include "session/plan.h"
#include "session/runner.h"

namespace airlock::cli {

/// The review policy for `mode` ("" = interactive when a terminal can ask,
/// else a kUsage error naming --review=auto and --review=none). kUsage also
/// for interactive without a terminal, and for `acceptFailed` with a mode
/// other than auto or all.
Result<session::ReviewPolicy> chooseReview(const HostContext& host, const std::string& mode, bool acceptFailed);

/// Whether the command gets a pty: `tty` is always, never or auto (both
/// stdin and stdout are terminals).
bool usePty(const HostContext& host, const std::string& tty);

/// The values of -e/--env flags: NAME=VALUE as given, NAME with the host's
/// value (kUsage naming `flag` when it is unset or the name is empty).
Result<std::vector<std::pair<std::string, std::string>>> envFlags(const HostContext& host,
                                                                  const std::vector<std::string>& values,
                                                                  const std::string& flag);

/// The real sandbox: vm::Machine::launch with `host` (which must outlive the launcher).
session::SandboxLauncher launchMachine(const HostContext& host);

}  // namespace airlock::cli
