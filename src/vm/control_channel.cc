#include "vm/control_channel.h"

#include "common/thread_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "common/exit_codes.h"
#include "common/interrupt.h"
#include "common/visible_text.h"

namespace airlock::vm {

using protocol::FrameType;

/// Longest wait for room to send one frame to the guest.
constexpr std::chrono::milliseconds kSendTimeout{10'000};

Result<> RemoteCommand::writeStdin(std::string_view data) {
  while (!data.empty()) {
    size_t n;
    {
      std::unique_lock lock(channel_.mutex_);
      channel_.changed_.wait(lock, [&] { return credit_ > 0 || exit_ || !channel_.closed_.empty(); });
      if (exit_) return {};
      if (!channel_.closed_.empty()) return fail("cannot send input: {}", channel_.closed_);
      n = std::min<size_t>({data.size(), credit_, protocol::kMaxChunk});
      credit_ -= static_cast<uint32_t>(n);
    }
    if (auto r = channel_.sendFrame(FrameType::kStdin, id_, data.substr(0, n)); !r) return r;
    data.remove_prefix(n);
  }
  return {};
}

Result<size_t> RemoteCommand::writeStdinSome(std::string_view data) {
  size_t sent = 0;
  while (sent < data.size()) {
    size_t n;
    {
      std::lock_guard lock(channel_.mutex_);
      if (exit_) return data.size();
      if (!channel_.closed_.empty()) return fail("cannot send input: {}", channel_.closed_);
      n = std::min<size_t>({data.size() - sent, credit_, protocol::kMaxChunk});
      if (n == 0) return sent;
      credit_ -= static_cast<uint32_t>(n);
    }
    if (auto r = channel_.sendFrame(FrameType::kStdin, id_, data.substr(sent, n)); !r) return std::unexpected(r.error());
    sent += n;
  }
  return sent;
}

Result<> RemoteCommand::closeStdin() { return channel_.sendFrame(FrameType::kStdin, id_, {}); }

Result<> RemoteCommand::resize(uint16_t rows, uint16_t cols) {
  return channel_.sendFrame(FrameType::kResize, id_, protocol::encodeResize(rows, cols));
}

Result<> RemoteCommand::signal(int signo) {
  return channel_.sendFrame(FrameType::kSignal, id_, protocol::encodeU32(static_cast<uint32_t>(signo)));
}

Result<protocol::ExitStatus> RemoteCommand::wait() {
  std::unique_lock lock(channel_.mutex_);
  channel_.changed_.wait(lock, [&] { return exit_ || !channel_.closed_.empty(); });
  if (exit_) return *exit_;
  return failWith(exit_code::kVmFailed, "the command's VM stopped before it finished: {}", channel_.closed_);
}

std::optional<Result<protocol::ExitStatus>> RemoteCommand::waitFor(std::chrono::milliseconds timeout) {
  std::unique_lock lock(channel_.mutex_);
  if (!channel_.changed_.wait_for(lock, timeout, [&] { return exit_ || !channel_.closed_.empty(); }))
    return std::nullopt;
  if (exit_) return Result<protocol::ExitStatus>(*exit_);
  return Result<protocol::ExitStatus>(
      failWith(exit_code::kVmFailed, "the command's VM stopped before it finished: {}", channel_.closed_));
}

std::string RemoteCommand::startError() const {
  std::lock_guard lock(channel_.mutex_);
  return startError_;
}

ControlChannel::ControlChannel(Fd fd) : fd_(std::move(fd)) { reader_ = std::thread([this] { readerLoop(); }); }

std::unique_ptr<ControlChannel> ControlChannel::fromFd(Fd fd) {
  return std::unique_ptr<ControlChannel>(new ControlChannel(std::move(fd)));
}

ControlChannel::~ControlChannel() {
  ::shutdown(fd_.get(), SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
}

Result<std::unique_ptr<ControlChannel>> ControlChannel::connect(const std::string& socketPath,
                                                                std::chrono::milliseconds timeout,
                                                                const std::function<bool()>& alive) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof addr.sun_path) return fail("socket path {} is too long", socketPath);
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return fail("cannot create a socket: {}", errnoText(errno));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      return fromFd(std::move(fd));
    int e = errno;
    if (!alive()) return failWith(exit_code::kVmFailed, "QEMU exited before its control socket was ready");
    if (std::chrono::steady_clock::now() > deadline)
      return failWith(exit_code::kVmFailed, "cannot connect to the VM's control socket {}: {}", socketPath, errnoText(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<> ControlChannel::waitReady(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  // In slices: Ctrl-C while the guest boots (common/interrupt.h) ends the wait.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!changed_.wait_for(lock, std::chrono::milliseconds(100), [&] { return ready_ || !closed_.empty(); })) {
    if (int sig = interruptSignal(); sig != 0) return std::unexpected(interruptedError(sig, "while the VM booted"));
    if (std::chrono::steady_clock::now() > deadline)
      return failWith(exit_code::kVmFailed, "the guest did not come up within {} s", timeout.count() / 1000);
  }
  if (!ready_) return failWith(exit_code::kVmFailed, "the VM stopped during boot: {}", closed_);
  return {};
}

Result<std::shared_ptr<RemoteCommand>> ControlChannel::exec(const protocol::ExecRequest& request,
                                                            OutputHandlers handlers) {
  std::string payload = protocol::encodeExec(request);
  if (payload.size() > protocol::kMaxPayload)
    return fail("the command's arguments and environment are larger than {} bytes", protocol::kMaxPayload);
  return open(FrameType::kExec, payload, std::move(handlers));
}

Result<std::shared_ptr<RemoteCommand>> ControlChannel::open(FrameType type, std::string_view payload,
                                                            OutputHandlers handlers) {
  std::shared_ptr<RemoteCommand> cmd;
  {
    std::lock_guard lock(mutex_);
    if (!closed_.empty()) return failWith(exit_code::kVmFailed, "cannot start a command in the VM: {}", closed_);
    uint32_t id = nextId_++;
    cmd.reset(new RemoteCommand(*this, id, std::move(handlers)));
    commands_[id] = cmd;
  }
  if (auto r = sendFrame(type, cmd->id_, payload); !r) return std::unexpected(r.error());
  return cmd;
}

Result<uint64_t> ControlChannel::exportWorkspace(const std::string& destPath, const ExportLimits& limits) {
  // Shared with the output handler, which may still run on the reader thread
  // after an early return.
  struct Sink {
    Fd out;
    uint64_t written = 0;  ///< guarded by the channel's mutex_
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    std::string error;     ///< the first failure; guarded by mutex_
    int code = exit_code::kInternal;
    bool draining = false;  ///< a host-side failure: the rest is read and dropped, the guest goes on
  };
  auto sink = std::make_shared<Sink>();
  // Never through a symlink planted at its name.
  sink->out.reset(::open(destPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!sink->out) return fail("cannot create {}: {}", destPath, errnoText(errno));
  OutputHandlers handlers;
  handlers.onStdout = [this, sink, destPath, max = limits.maxBytes, live = limits.live](std::string_view data) {
    {
      std::lock_guard lock(mutex_);
      sink->last = std::chrono::steady_clock::now();
      if (!sink->error.empty()) return;
      if (sink->written + data.size() > max) {
        sink->error = fmt::format("the guest's change set exceeds the limit of {} MiB; it was refused", max >> 20);
        sink->code = exit_code::kUnsafeChangeSet;
        sink->draining = live;  // a live export drops the rest; any other ends the channel (below)
        changed_.notify_all();
      } else {
        sink->written += data.size();
      }
    }
    if (sink->code == exit_code::kUnsafeChangeSet) {
      if (!live) abandon("the export exceeded its size limit");
      return;
    }
    // All-zero pieces (a sparse file's holes) become holes of the file.
    bool zeros = data.find_first_not_of('\0') == std::string_view::npos;
    if (zeros ? ::lseek(sink->out.get(), static_cast<off_t>(data.size()), SEEK_CUR) < 0
              : !writeAll(sink->out.get(), data)) {
      std::lock_guard lock(mutex_);
      sink->error = fmt::format("cannot write {}: {}", destPath, errnoText(errno));
      sink->draining = true;
      changed_.notify_all();
    }
  };
  auto cmd = open(FrameType::kExport, {}, std::move(handlers));
  if (!cmd) return std::unexpected(cmd.error());
  auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!sink->error.empty() && !sink->draining) {
      lock.unlock();
      // The same reason as the handler's own, whichever of the two comes first.
      abandon(sink->code == exit_code::kUnsafeChangeSet ? "the export exceeded its size limit" : "the export failed");
      return failWith(sink->code, "{}", sink->error);
    }
    if (limits.live && sink->draining) return failWith(sink->code, "{}; the session goes on", sink->error);
    if ((*cmd)->exit_) break;
    if (!closed_.empty()) return failWith(exit_code::kVmFailed, "the VM stopped during the export: {}", closed_);
    auto now = std::chrono::steady_clock::now();
    auto idleEnd = sink->last + limits.idle;
    auto deadline = start + limits.grace +
                    std::chrono::milliseconds(sink->written * 1000 / std::max<uint64_t>(limits.minBytesPerSecond, 1));
    if (now >= idleEnd || now >= deadline) {
      std::string why =
          now >= idleEnd
              ? fmt::format("the guest sent nothing of its change set for {} s (the export's inactivity limit)",
                            limits.idle.count() / 1000)
              : fmt::format("the guest's export missed its deadline ({} s plus 1 s per {} MiB; {} MiB received)",
                            limits.grace.count() / 1000, limits.minBytesPerSecond >> 20, sink->written >> 20);
      if (limits.live) {  // this export alone ends: the rest of its stream is dropped, the agent goes on
        sink->error = why;
        sink->draining = true;
        return failWith(exit_code::kVmFailed, "{}; the session goes on (try again when the guest is less busy)", why);
      }
      lock.unlock();
      abandon("the export timed out");
      return failWith(exit_code::kVmFailed, "{}; the VM was stopped", why);
    }
    changed_.wait_until(lock, std::min(idleEnd, deadline));
  }
  auto status = *(*cmd)->exit_;
  uint64_t written = sink->written;
  if (!sink->error.empty()) return failWith(sink->code, "{}", sink->error);
  lock.unlock();
  if (status.shellCode() != 0) return fail("the guest could not export the workspace: {}", (*cmd)->startError());
  if (::ftruncate(sink->out.get(), static_cast<off_t>(written)) != 0 || ::fsync(sink->out.get()) != 0)
    return fail("cannot write {}: {}", destPath, errnoText(errno));
  return written;
}

void ControlChannel::abandon(const std::string& reason) {
  close(reason);
  ::shutdown(fd_.get(), SHUT_RDWR);
}

Result<> ControlChannel::shutdown() { return sendFrame(FrameType::kShutdown, 0, {}); }

std::string ControlChannel::closedReason() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

Result<> ControlChannel::sendFrame(FrameType type, uint32_t channel, std::string_view payload) {
  std::string frame = protocol::encodeFrame(type, channel, payload);
  std::lock_guard lock(writeMutex_);
  std::string_view left = frame;
  while (!left.empty()) {
    ssize_t n = ::send(fd_.get(), left.data(), left.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // A guest that stops reading never blocks the host for long.
        pollfd p{fd_.get(), POLLOUT, 0};
        if (::poll(&p, 1, static_cast<int>(kSendTimeout.count())) > 0) continue;
        abandon("the guest stopped reading the control channel");
        return failWith(exit_code::kVmFailed, "the guest stopped reading the control channel for {} s",
                        kSendTimeout.count() / 1000);
      }
      return failWith(exit_code::kVmFailed, "lost the VM's control channel: {}", errnoText(errno));
    }
    left.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

void ControlChannel::close(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (closed_.empty()) closed_ = reason;
  changed_.notify_all();
}

void ControlChannel::readerLoop() {
  // Signals belong to the thread that attaches the terminal, never to this one.
  blockSignalsInThisThread();
  protocol::FrameDecoder decoder;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n == 0) {
      // The end of the stream inside a frame is a truncated frame: say so
      // rather than report a clean power-off.
      if (decoder.pending() != 0)
        return close(fmt::format("the guest sent a malformed frame: the control channel closed {} bytes into a frame",
                                 decoder.pending()));
      return close("the control channel closed (the VM powered off or QEMU exited)");
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return close("reading the control channel failed: " + errnoText(errno));
    }
    auto ok = decoder.consume(std::string_view(buf, static_cast<size_t>(n)),
                              [this](protocol::Frame&& frame) { dispatch(frame); });
    if (!ok) {
      ::shutdown(fd_.get(), SHUT_RDWR);
      return close("the guest sent a malformed frame: " + ok.error());
    }
  }
}

void ControlChannel::dispatch(const protocol::Frame& frame) {
  std::shared_ptr<RemoteCommand> cmd;
  {
    std::lock_guard lock(mutex_);
    if (frame.type == FrameType::kHello) {
      auto hello = protocol::decodeHello(frame.payload);
      if (hello && hello->first == protocol::kVersion) ready_ = true;
      changed_.notify_all();
      return;
    }
    auto it = commands_.find(frame.channel);
    if (it == commands_.end()) return;  // a late frame for a finished command
    cmd = it->second;
    switch (frame.type) {
      case FrameType::kStdinAck:
        if (auto n = protocol::decodeU32(frame.payload))
          cmd->credit_ = std::min<uint64_t>(protocol::kStdinWindow, uint64_t{cmd->credit_} + *n);
        changed_.notify_all();
        return;
      case FrameType::kError:
        cmd->startError_ = visibleText(frame.payload.substr(0, 4096));  // guest text, printed after "airlock:"
        return;
      case FrameType::kExit:
        if (auto status = protocol::decodeExit(frame.payload)) {
          cmd->exit_ = *status;
        } else {
          cmd->exit_ = protocol::ExitStatus{false, 255};
          cmd->startError_ = "the guest reported an invalid exit status: " + status.error();
        }
        commands_.erase(it);
        changed_.notify_all();
        return;
      case FrameType::kStdout:
      case FrameType::kStderr:
        break;
      default:
        return;  // host-to-guest types coming back are ignored
    }
  }
  const auto& handler = frame.type == FrameType::kStdout ? cmd->handlers_.onStdout : cmd->handlers_.onStderr;
  if (handler && !frame.payload.empty()) handler(frame.payload);
}

}  // namespace airlock::vm
