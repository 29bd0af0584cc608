#pragma once
// Connecting the user's terminal to a command in the guest: a pty in raw mode
// with window-size changes forwarded, or plain pipes when stdin/stdout are not
// terminals. Ctrl-C reaches the guest process (as a byte on the pty, or as
// SIGINT forwarded in pipe mode); SIGTERM/SIGHUP to airlock are forwarded as
// SIGTERM. Input is forwarded without ever blocking: a command that does not
// read its stdin stalls only its own input, never signals or output.
// The session always ends: on a second SIGTERM/SIGHUP, 10 s after the first,
// or on the escape Ctrl-] Ctrl-] typed at a terminal (kEscapeHelp).

#include <termios.h>

#include "common/error.h"
#include "session/ui.h"
#include "vm/protocol.h"
#include "vm/sandbox.h"

namespace airlock::cli {

/// One line for --help and README: how to end a session whatever the guest does.
inline constexpr const char* kEscapeHelp =
    "Ctrl-] twice in a row (at a terminal), or SIGTERM twice, ends the session at once: the changes so far are "
    "exported (with a short deadline) for review, then the VM is stopped";

/// Puts the terminal on fd 0 in raw mode; on destruction restores it and
/// resets what the guest program left on the terminal (kTerminalReset on
/// fd 1). Does nothing when fd 0 is not a terminal.
class RawMode {
 public:
  RawMode();
  ~RawMode();
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

/// The size of the terminal on fd 1, rows and columns; false when fd 1 is
/// not a terminal.
bool terminalSize(uint16_t& rows, uint16_t& cols);

/// Runs `request` (its pty/rows/cols are filled in here when `usePty`) and
/// pumps stdin/stdout/stderr until it exits or the user forces the end.
/// Prints the guest's start error, if any, to stderr.
Result<session::Attached> attachCommand(vm::Sandbox& sandbox, protocol::ExecRequest request, bool usePty);

}  // namespace airlock::cli
