#pragma once
// Host half of the control protocol (vm/protocol.h): one connection to a VM's
// control port, multiplexing any number of commands. Every frame from the
// guest is untrusted: a malformed one closes the channel and fails all
// commands with an error that says so.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "vm/protocol.h"

namespace airlock::vm {

class ControlChannel;

/// Bounds of one workspace export (ControlChannel::exportWorkspace): a guest
/// that sends too much, stops sending, or trickles is cut off. The defaults
/// are the ones `airlock run` uses.
struct ExportLimits {
  uint64_t maxBytes = uint64_t{16} << 30;       ///< the change set's size cap, bytes
  std::chrono::milliseconds idle{30'000};       ///< longest silence between two pieces of the stream
  std::chrono::milliseconds grace{60'000};      ///< the overall deadline is grace + bytes / minBytesPerSecond
  uint64_t minBytesPerSecond = uint64_t{1} << 20;  ///< the slowest average rate accepted after the grace
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

/// Receives a command's output on the channel's reader thread. A handler may
/// block (that back-pressures the guest); it must not call back into the channel's wait().
struct OutputHandlers {
  std::function<void(std::string_view)> onStdout;
  std::function<void(std::string_view)> onStderr;
};

/// One command running in the guest.
class RemoteCommand {
 public:
  /// Sends stdin bytes, split into chunks, waiting for window credit from the
  /// guest (at most protocol::kStdinWindow bytes in flight).
  Result<> writeStdin(std::string_view data);
  /// Signals end of input (pipes mode; ignored by a pty).
  Result<> closeStdin();
  /// Sets the pty window size in rows and columns.
  Result<> resize(uint16_t rows, uint16_t cols);
  /// Delivers `signo` to the command's process group in the guest.
  Result<> signal(int signo);
  /// Sends as much of `data` as the guest's window allows now, without
  /// waiting; returns the bytes taken (all of them once the command exited).
  Result<size_t> writeStdinSome(std::string_view data);
  /// Blocks until the command exits; fails if the channel is lost first.
  Result<protocol::ExitStatus> wait();
  /// wait() for at most `timeout`: nullopt if the command is still running.
  std::optional<Result<protocol::ExitStatus>> waitFor(std::chrono::milliseconds timeout);
  /// The guest's message if the command could not start (empty otherwise),
  /// escaped with visibleText().
  std::string startError() const;

 private:
  friend class ControlChannel;

  RemoteCommand(ControlChannel& channel, uint32_t id, OutputHandlers handlers)
      : channel_(channel), id_(id), handlers_(std::move(handlers)) {}
  ControlChannel& channel_;
  uint32_t id_;
  OutputHandlers handlers_;
  uint32_t credit_ = protocol::kStdinWindow;
  std::optional<protocol::ExitStatus> exit_;
  std::string startError_;
};

class ControlChannel {
 public:
  /// Connects to the unix socket QEMU serves the control port on, retrying
  /// while `alive()` is true until `timeout` (QEMU creates it at start-up).
  static Result<std::unique_ptr<ControlChannel>> connect(const std::string& socketPath,
                                                          std::chrono::milliseconds timeout,
                                                          const std::function<bool()>& alive);
  /// Takes over an already connected stream socket (a unix socket to QEMU's
  /// control port, or one end of a socketpair in tests) and starts reading it
  /// at once; the peer plays the guest. The channel owns `fd` and shuts it
  /// down on destruction. Never fails: a dead fd shows as a closed channel.
  static std::unique_ptr<ControlChannel> fromFd(Fd fd);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  /// Waits for the guest's hello (the guest is booted and serving).
  Result<> waitReady(std::chrono::milliseconds timeout);
  /// Starts a command. Output arrives on `handlers` from the reader thread.
  Result<std::shared_ptr<RemoteCommand>> exec(const protocol::ExecRequest& request, OutputHandlers handlers);
  /// Asks the guest to stream its /workspace changes (OCI layer tar) into
  /// the file `destPath` within `limits` (all-zero pieces are written as
  /// holes, so a sparse file stays sparse). Returns the number of bytes
  /// written. Past any limit the channel is closed at once (nothing more is
  /// read; stop the VM): over maxBytes fails with kUnsafeChangeSet, silence
  /// or a missed deadline with kVmFailed, each naming the limit.
  Result<uint64_t> exportWorkspace(const std::string& destPath, const ExportLimits& limits = {});
  /// Asks the guest to stop every command and power off.
  Result<> shutdown();
  /// Why the channel closed (empty while open).
  std::string closedReason() const;

 private:
  friend class RemoteCommand;
  explicit ControlChannel(Fd fd);
  /// Registers a new channel and sends its opening frame.
  Result<std::shared_ptr<RemoteCommand>> open(protocol::FrameType type, std::string_view payload,
                                              OutputHandlers handlers);
  void readerLoop();
  void dispatch(const protocol::Frame& frame);
  void close(const std::string& reason);
  /// Closes the channel for `reason` and stops reading from the guest.
  void abandon(const std::string& reason);
  Result<> sendFrame(protocol::FrameType type, uint32_t channel, std::string_view payload);

  Fd fd_;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::mutex writeMutex_;
  std::condition_variable changed_;
  bool ready_ = false;
  std::string closed_;
  uint32_t nextId_ = 1;
  std::map<uint32_t, std::shared_ptr<RemoteCommand>> commands_;
};

}  // namespace airlock::vm
