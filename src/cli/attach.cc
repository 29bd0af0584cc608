#include "cli/attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "cli/terminal_reset.h"
#include "common/fd.h"

namespace airlock::cli {
namespace {

/// Puts the terminal on fd 0 in raw mode; on destruction restores it and resets
/// what the guest program left on the terminal (kTerminalReset on fd 1).
class RawMode {
 public:
  RawMode() {
    if (tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawMode() {
    if (!active_) return;
    tcsetattr(0, TCSANOW, &saved_);
    resetTerminal(1);  // what the guest program left on the terminal ends with it
  }

 private:
  termios saved_{};
  bool active_ = false;
};

/// Blocks the signals attach handles and restores the old mask on destruction.
class SignalScope {
 public:
  SignalScope() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) sigaddset(&mask, s);
    pthread_sigmask(SIG_BLOCK, &mask, &saved_);
    fd_.reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~SignalScope() {
    fd_.reset();
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  int fd() const { return fd_.get(); }

 private:
  sigset_t saved_{};
  Fd fd_;
};

bool windowSize(uint16_t& rows, uint16_t& cols) {
  winsize ws{};
  if (ioctl(1, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0) return false;
  rows = ws.ws_row;
  cols = ws.ws_col;
  return true;
}

}  // namespace

bool interactiveTerminal() { return isatty(0) && isatty(1); }

Result<int> attachCommand(vm::ControlChannel& channel, protocol::ExecRequest request, bool usePty) {
  request.pty = usePty;
  if (usePty) windowSize(request.rows, request.cols);
  SignalScope signals;
  Fd done(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  vm::OutputHandlers handlers;
  handlers.onStdout = [](std::string_view data) { writeAll(1, data); };
  handlers.onStderr = [](std::string_view data) { writeAll(2, data); };
  auto cmd = channel.exec(request, handlers);
  if (!cmd) return std::unexpected(cmd.error());
  std::optional<RawMode> raw;
  if (usePty) raw.emplace();

  Result<protocol::ExitStatus> status = fail("not finished");
  std::thread waiter([&] {
    status = (*cmd)->wait();
    uint64_t one = 1;
    (void)!write(done.get(), &one, sizeof one);
  });

  bool stdinOpen = true;
  char buf[protocol::kMaxChunk];
  std::optional<std::chrono::steady_clock::time_point> forceStopAt;
  bool finished = false;
  for (;;) {
    pollfd fds[3] = {{done.get(), POLLIN, 0}, {signals.fd(), POLLIN, 0}, {stdinOpen ? 0 : -1, POLLIN, 0}};
    int timeout = forceStopAt ? 100 : -1;
    int r = poll(fds, 3, timeout);
    if (r < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      finished = true;
      break;
    }
    if (forceStopAt && std::chrono::steady_clock::now() > *forceStopAt) break;
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (read(signals.fd(), &info, sizeof info) == sizeof info) {
        int sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGWINCH) {
          uint16_t rows, cols;
          if (usePty && windowSize(rows, cols)) (void)(*cmd)->resize(rows, cols);
        } else if (sig == SIGTERM || sig == SIGHUP) {
          if (forceStopAt) {
            forceStopAt = std::chrono::steady_clock::now();  // asked twice: stop now
          } else {
            (void)(*cmd)->signal(SIGTERM);
            forceStopAt = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            std::fprintf(stderr, "\r\nairlock: sent SIGTERM to the command; the VM is powered off in 10 s if it "
                                 "does not exit (send the signal again to stop now)\r\n");
          }
        } else {
          (void)(*cmd)->signal(sig);
        }
      }
    }
    if (fds[2].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n > 0) {
        if (auto w = (*cmd)->writeStdin(std::string_view(buf, static_cast<size_t>(n))); !w) stdinOpen = false;
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        stdinOpen = false;
        if (!usePty) (void)(*cmd)->closeStdin();
      }
    }
  }
  if (!finished) {
    // The command ignored SIGTERM for 10 s: power the VM off, which kills it.
    (void)channel.shutdown();
  }
  waiter.join();
  raw.reset();
  if (std::string err = (*cmd)->startError(); !err.empty()) std::fprintf(stderr, "airlock: %s\n", err.c_str());
  if (!finished) return 128 + SIGTERM;
  if (!status) return std::unexpected(status.error());
  return status->shellCode();
}

}  // namespace airlock::cli
