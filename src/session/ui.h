#pragma once
// The UI seam: everything a session shows or asks, behind one interface, so
// the same runner runs at a terminal (cli/terminal_ui.h), without one (a
// supervisor process of a detached session, later), and in unit tests.

#include <string>
#include <vector>

#include "common/error.h"
#include "vm/protocol.h"
#include "vm/sandbox.h"
#include "workspace/gate.h"
#include "workspace/review.h"

namespace airlock::session {

/// How an attached command ended.
struct Attached {
  int code = 0;         ///< shell-style exit code (code, or 128+signal)
  bool forced = false;  ///< the user ended the session before the command exited (code is 128+SIGTERM)
};

/// What a session shows and asks (progress, warnings, the attached command,
/// the review terminal and the review's outcome). TerminalUi in src/cli is the
/// real one; tests record what they were told.
class Ui {
 public:
  virtual ~Ui() = default;
  /// A progress line ("booting claude-code (2 vCPUs, ...)"); quiet UIs drop it.
  virtual void progress(const std::string& line) = 0;
  /// A line worth a look that only costs speed (the TCG fallback); quiet UIs drop it.
  virtual void notice(const std::string& line) = 0;
  /// A one-line warning (a bad ignore pattern, a --publish port); always shown.
  virtual void warn(const std::string& line) = 0;
  /// A line the user must see whatever the verbosity (nothing flushed
  /// because the agent failed, waiting for another session).
  virtual void say(const std::string& line) = 0;
  /// Runs `request` in `sandbox` with the user's streams attached (a pty in
  /// raw mode when `pty`, else pipes) until it exits or the user forces the end.
  virtual Result<Attached> attach(vm::Sandbox& sandbox, protocol::ExecRequest request, bool pty) = 0;
  /// The terminal an interactive review asks on; null when there is none.
  virtual workspace::ReviewTerminal* reviewTerminal() = 0;
  /// Shows what a review did (the summary table, what was kept and where).
  virtual void reviewed(const workspace::GateOutcome& outcome, const std::string& workspace) = 0;
  /// Shows what the egress firewall blocked (`lines`, one per entry);
  /// `details` says where the full log is.
  virtual void blockedEgress(const std::vector<std::string>& lines, const std::string& details) = 0;
};

}  // namespace airlock::session
