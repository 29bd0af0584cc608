#pragma once
// Connecting the user's terminal to a command in the guest: a pty in raw mode
// with window-size changes forwarded, or plain pipes when stdin/stdout are not
// terminals. Ctrl-C reaches the guest process (as a byte on the pty, or as
// SIGINT forwarded in pipe mode); SIGTERM/SIGHUP to airlock are forwarded as
// SIGTERM.

#include "common/error.h"
#include "vm/control_channel.h"
#include "vm/protocol.h"

namespace airlock::cli {

/// Runs `request` (its pty/rows/cols are filled in here when `usePty`) and
/// pumps stdin/stdout/stderr until it exits. Returns the shell-style exit code
/// (code, or 128+signal). Prints the guest's start error, if any, to stderr.
Result<int> attachCommand(vm::ControlChannel& channel, protocol::ExecRequest request, bool usePty);

/// True when stdin and stdout are both terminals.
bool interactiveTerminal();

}  // namespace airlock::cli
