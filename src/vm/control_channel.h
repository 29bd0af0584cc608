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
#include "vm/sandbox.h"

namespace airlock::vm {

class ControlChannel;

/// One command running in the guest.
class RemoteCommand final : public Command {
 public:
  /// Sends stdin bytes, split into chunks, waiting for window credit from the
  /// guest (at most protocol::kStdinWindow bytes in flight).
  Result<> writeStdin(std::string_view data) override;
  /// Signals end of input (pipes mode; ignored by a pty).
  Result<> closeStdin() override;
  /// Sets the pty window size in rows and columns.
  Result<> resize(uint16_t rows, uint16_t cols) override;
  /// Delivers `signo` to the command's process group in the guest.
  Result<> signal(int signo) override;
  /// Sends as much of `data` as the guest's window allows now, without
  /// waiting; returns the bytes taken (all of them once the command exited).
  Result<size_t> writeStdinSome(std::string_view data) override;
  /// Blocks until the command exits; fails if the channel is lost first.
  Result<protocol::ExitStatus> wait() override;
  /// wait() for at most `timeout`: nullopt if the command is still running.
  std::optional<Result<protocol::ExitStatus>> waitFor(std::chrono::milliseconds timeout) override;
  /// The guest's message if the command could not start (empty otherwise),
  /// escaped with visibleText().
  std::string startError() const override;

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
