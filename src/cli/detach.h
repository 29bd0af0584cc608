#pragma once
// `airlock run -d` and `airlock run-image -d`: the session runs in a
// supervisor process of its own (session/supervisor.h), started by
// re-running the same command line with --supervise in a new session
// (setsid), without a terminal. The starting process relays what the
// supervisor says until the command runs, prints the session's name and
// exits 0 (docker run -d prints the container id); a failure before that is
// printed and its exit code returned.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "common/host_context.h"
#include "session/runner.h"
#include "session/supervisor.h"

namespace airlock::cli {

/// The flags of a session that may run detached.
struct DetachFlags {
  bool detach = false;     ///< -d/--detach
  std::string name;        ///< --name ("" = agent + short id)
  bool supervise = false;  ///< --supervise (hidden): this process is the supervisor
};

/// Adds -d/--detach, --name and the hidden --supervise to `cmd`.
void addDetachFlags(CLI::App& cmd, DetachFlags& flags);

/// Starts the supervisor for `invocation` (this process's argv, the
/// `airlock AGENT` short form already spelled `airlock run AGENT`, with its
/// `--` part) and relays its start (see the file comment). SIGINT, SIGTERM
/// or SIGHUP meanwhile is passed on to the supervisor, which stops preparing
/// and removes what it made; the exit code is then its 128+N. One that came
/// as the command started stops the session (its changes are kept) and
/// returns 128+N with the name on stderr; a second signal returns at once.
int startDetached(const std::vector<std::string>& invocation);

/// The supervisor's part: opens, boots and runs the session through
/// `runner` with `ui`, then exports its changes when `exportChanges` (a
/// snapshot session; no review). Returns the command's exit code, or
/// airlock's on a failure (said on stderr before the start, in the session
/// log after).
int superviseSession(session::Runner& runner, session::DetachedUi& ui, bool exportChanges);

}  // namespace airlock::cli
