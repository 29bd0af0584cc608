#pragma once
// The sandbox seam: what a session needs from a VM, and nothing about how it
// is made. vm::Machine (QEMU microVM, control channel, egress network) is the
// real one; tests/unit/session has a FakeSandbox that writes a canned change
// set and returns a canned exit code, so the session runner is tested
// without QEMU (ninja's CommandRunner vs FakeCommandRunner).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "vm/protocol.h"

namespace airlock::vm {

/// Bounds of one workspace export (Sandbox::exportWorkspace): a guest that
/// sends too much, stops sending, or trickles is cut off. The defaults are
/// the ones `airlock run` uses.
struct ExportLimits {
  uint64_t maxBytes = uint64_t{16} << 30;          ///< the change set's size cap, bytes
  std::chrono::milliseconds idle{30'000};          ///< longest silence between two pieces of the stream
  std::chrono::milliseconds grace{60'000};         ///< the overall deadline is grace + bytes / minBytesPerSecond
  uint64_t minBytesPerSecond = uint64_t{1} << 20;  ///< the slowest average rate accepted after the grace
  /// A live export beside the running agent (`airlock diff`): past a limit
  /// only this export fails; the rest of its stream is read and dropped and
  /// the VM goes on (a busy guest must not cost the session its changes).
  bool live = false;
};

/// The short export after the user forced the session to end (second
/// SIGTERM, the Ctrl-] Ctrl-] escape): done within about 20 s (at most
/// 20 s + 16 s at the size cap), or given up.
inline ExportLimits forcedExportLimits() {
  ExportLimits l;
  l.idle = std::chrono::seconds(5);
  l.grace = std::chrono::seconds(20);
  l.minBytesPerSecond = uint64_t{1} << 30;
  return l;
}

/// Receives a command's output (on the sandbox's reader thread). A handler
/// may block (that back-pressures the guest); it must not wait for the
/// command it belongs to.
struct OutputHandlers {
  std::function<void(std::string_view)> onStdout;
  std::function<void(std::string_view)> onStderr;
};

/// One command running in the sandbox.
class Command {
 public:
  virtual ~Command() = default;
  /// Sends stdin bytes, waiting for window credit from the guest.
  virtual Result<> writeStdin(std::string_view data) = 0;
  /// Sends as much of `data` as the guest's window allows now, without
  /// waiting; returns the bytes taken (all of them once the command exited).
  virtual Result<size_t> writeStdinSome(std::string_view data) = 0;
  /// Signals end of input (pipes mode; ignored by a pty).
  virtual Result<> closeStdin() = 0;
  /// Sets the pty window size in rows and columns.
  virtual Result<> resize(uint16_t rows, uint16_t cols) = 0;
  /// Delivers `signo` to the command's process group in the guest.
  virtual Result<> signal(int signo) = 0;
  /// Blocks until the command exits; fails if the sandbox is lost first.
  virtual Result<protocol::ExitStatus> wait() = 0;
  /// wait() for at most `timeout`: nullopt if the command is still running.
  virtual std::optional<Result<protocol::ExitStatus>> waitFor(std::chrono::milliseconds timeout) = 0;
  /// The guest's message if the command could not start (empty otherwise),
  /// escaped with visibleText().
  virtual std::string startError() const = 0;
};

/// A booted sandbox: commands run in it, its /workspace changes can be
/// exported, and it is stopped exactly once (stop() is idempotent).
class Sandbox {
 public:
  virtual ~Sandbox() = default;
  /// Starts a command; its output arrives on `handlers`.
  virtual Result<std::shared_ptr<Command>> exec(const protocol::ExecRequest& request, OutputHandlers handlers) = 0;
  /// Streams the guest's /workspace changes (an OCI layer tar) into the file
  /// `destPath` within `limits`; returns the bytes written. Past a limit the
  /// stream is abandoned (stop the sandbox next): over maxBytes fails with
  /// kUnsafeChangeSet, silence or a missed deadline with kVmFailed.
  virtual Result<uint64_t> exportWorkspace(const std::string& destPath, const ExportLimits& limits) = 0;
  /// Stops the sandbox and confirms it is gone (no guest code runs after).
  virtual void stop() = 0;
  /// A one-line explanation of why the guest died (escaped; may be empty).
  virtual std::string crashReason() const = 0;
  /// What the egress firewall blocked so far, one line each ("api.x.com
  /// (not on the allowlist): 3x"); empty without a firewall.
  virtual std::vector<std::string> blockedEgress() const = 0;
  /// True when the sandbox has an egress firewall (so blockedEgress means something).
  virtual bool hasEgress() const = 0;
};

}  // namespace airlock::vm
