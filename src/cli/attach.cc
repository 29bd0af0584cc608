#include "cli/attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "cli/terminal_reset.h"
#include "common/fd.h"
#include "session/command_waiter.h"

namespace airlock::cli {
namespace {

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

}  // namespace

bool terminalSize(uint16_t& rows, uint16_t& cols) {
  winsize ws{};
  if (ioctl(1, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0) return false;
  rows = ws.ws_row;
  cols = ws.ws_col;
  return true;
}

RawMode::RawMode() {
  if (tcgetattr(0, &saved_) != 0) return;
  termios raw = saved_;
  cfmakeraw(&raw);
  active_ = tcsetattr(0, TCSANOW, &raw) == 0;
}

RawMode::~RawMode() {
  if (!active_) return;
  tcsetattr(0, TCSANOW, &saved_);
  resetTerminal(1);  // what the guest program left on the terminal ends with it
}

Result<session::Attached> attachCommand(vm::Sandbox& sandbox, protocol::ExecRequest request, bool usePty) {
  request.pty = usePty;
  if (usePty) terminalSize(request.rows, request.cols);
  SignalScope signals;
  vm::OutputHandlers handlers;
  handlers.onStdout = [](std::string_view data) { writeAll(1, data); };
  handlers.onStderr = [](std::string_view data) { writeAll(2, data); };
  auto cmd = sandbox.exec(request, handlers);
  if (!cmd) return std::unexpected(cmd.error());
  std::optional<RawMode> raw;
  if (usePty) raw.emplace();

  session::CommandWaiter waiter(*cmd);

  constexpr char kEscape = 0x1d;  // Ctrl-]
  bool stdinOpen = true;          // still reading fd 0
  bool stdinEnded = false;        // fd 0 hit end of input; closeStdin once `input` is sent
  std::string input;              // read from fd 0, waiting for window credit
  bool escapeArmed = false;
  char buf[protocol::kMaxChunk];
  std::optional<std::chrono::steady_clock::time_point> forceStopAt;
  bool finished = false;
  for (;;) {
    // Read more input only when the last piece went out: the guest's window
    // bounds what is buffered, and poll always sees signals and the exit.
    pollfd fds[3] = {{waiter.fd(), POLLIN, 0},
                     {signals.fd(), POLLIN, 0},
                     {stdinOpen && input.empty() ? 0 : -1, POLLIN, 0}};
    int timeout = forceStopAt ? 100 : !input.empty() ? 20 : -1;
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
          if (usePty && terminalSize(rows, cols)) (void)(*cmd)->resize(rows, cols);
        } else if (sig == SIGTERM || sig == SIGHUP) {
          if (forceStopAt) {
            forceStopAt = std::chrono::steady_clock::now();  // asked twice: stop now
          } else {
            (void)(*cmd)->signal(SIGTERM);
            forceStopAt = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            std::fprintf(stderr, "\r\nairlock: sent SIGTERM to the command; the session ends in 10 s if it "
                                 "does not exit (send the signal again to end it now)\r\n");
          }
        } else {
          (void)(*cmd)->signal(sig);
        }
      }
    }
    if (fds[2].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n > 0) {
        std::string_view got(buf, static_cast<size_t>(n));
        if (usePty) {  // keystrokes: watch for the escape
          bool escaped = false;
          for (char c : got) {
            escaped = escapeArmed && c == kEscape;
            if (escaped) break;
            escapeArmed = c == kEscape;
          }
          if (escaped) {
            std::fprintf(stderr, "\r\nairlock: Ctrl-] Ctrl-]: ending the session\r\n");
            break;
          }
        }
        input.assign(got);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        stdinOpen = false;
        stdinEnded = true;
      }
    }
    if (!input.empty()) {
      auto sent = (*cmd)->writeStdinSome(input);
      if (!sent) {
        stdinOpen = false;
        input.clear();
      } else {
        input.erase(0, *sent);
      }
    }
    if (stdinEnded && input.empty()) {
      stdinEnded = false;
      if (!usePty) (void)(*cmd)->closeStdin();
    }
  }
  if (!finished) {
    // Forced: the command is killed; the caller exports what it left (with a
    // short deadline) and stops the VM, whether the guest answers or not.
    (void)(*cmd)->signal(SIGKILL);
  }
  raw.reset();
  if (!finished) return session::Attached{128 + SIGTERM, true};
  if (std::string err = (*cmd)->startError(); !err.empty()) std::fprintf(stderr, "airlock: %s\n", err.c_str());
  const Result<protocol::ExitStatus>& status = waiter.status();  // written before fd() became readable
  if (!status) return std::unexpected(status.error());
  return session::Attached{status->shellCode(), false};
}

}  // namespace airlock::cli
