#pragma once
// The supervisor of a detached session (`airlock run -d`): the airlock
// process that owns the session (its run lock), the VM, the egress proxy and
// the credential broker, with no terminal. Like podman's conmon there is one
// per session and no daemon. Its UI:
//
//   - until the command starts, progress and warnings go to stderr, which
//     `run -d` relays to the user's terminal; then one marker line
//     (kStartedMarker + name) and stderr is let go; afterwards every line
//     goes to the session log;
//   - the command runs on a pty whose output is appended to
//     SessionLayout::output() (capped at kOutputCap) and sent to the
//     clients of the attach socket (attach_frames.h), whose keystrokes and
//     window sizes reach the command;
//   - SIGTERM/SIGHUP (`airlock stop`) is forwarded to the command as
//     SIGTERM; a second one, or 10 s, ends it as the Ctrl-] escape does.
// No review runs here: the changes are exported and wait for `airlock
// review NAME`.

#include <cstdint>
#include <string>

#include "common/error.h"
#include "common/fd.h"
#include "session/ui.h"

namespace airlock::session {

/// The line (on stderr) that tells `run -d` the command runs; the name follows.
inline constexpr const char* kStartedMarker = "\x01" "airlock-started ";

/// The most of the command's output kept in SessionLayout::output(), bytes;
/// later output still reaches attached clients.
inline constexpr uint64_t kOutputCap = uint64_t{64} << 20;

/// Listens on the attach socket of the session directory `dir` (made 0600;
/// bound through the directory's descriptor, so a long path is no problem).
Result<Fd> listenAttachSocket(const std::string& dir);

/// Connects to the attach socket of `dir`. kUsage, naming the session as
/// `name`, when nothing listens there (the session is not a running
/// detached one).
Result<Fd> connectAttachSocket(const std::string& dir, const std::string& name);

/// The UI of a detached session (see the file comment).
class DetachedUi : public Ui {
 public:
  /// Blocks SIGTERM, SIGHUP and SIGINT in the calling thread for the rest
  /// of the process's life and reads them from a signalfd: construct it
  /// before any thread exists (before planning), so every thread inherits
  /// the block and `airlock stop` is handled, never fatal. One that comes
  /// while the session is prepared (Runner::prepare(), whose InterruptScope
  /// unblocks them) ends the preparation and nothing is kept; after the
  /// command exited, the export goes on within its own deadlines.
  explicit DetachedUi(bool quiet);
  /// The session directory, once Runner::open() made it: lines go to its log
  /// after the start, the output and the attach socket live there.
  void setSessionDir(const std::string& dir, const std::string& name) {
    dir_ = dir;
    name_ = name;
  }
  void progress(const std::string& line) override;
  void notice(const std::string& line) override;
  void warn(const std::string& line) override;
  void say(const std::string& line) override;
  Result<Attached> attach(vm::Sandbox& sandbox, protocol::ExecRequest request, bool pty) override;
  workspace::ReviewTerminal* reviewTerminal() override { return nullptr; }
  void reviewed(const workspace::GateOutcome& outcome, const std::string& workspace) override;
  void blockedEgress(const std::vector<std::string>& lines, const std::string& details) override;

 private:
  void line(const std::string& text, bool always);
  bool quiet_;
  Fd signals_;
  bool started_ = false;
  std::string dir_, name_;
};

}  // namespace airlock::session
