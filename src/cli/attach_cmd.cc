// `airlock attach NAME`, `airlock exec NAME -- CMD`, `airlock shell NAME` and
// `airlock logs NAME`: a detached session's terminal and VM, live (its
// supervisor's attach socket, session/attach_frames.h), or its terminal as
// it was recorded (SessionLayout::output()).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "cli/attach.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/terminal_text.h"
#include "session/attach_frames.h"
#include "session/layout.h"
#include "session/session.h"
#include "session/supervisor.h"

namespace airlock::cli {
namespace {

using session::AttachFrame;
using session::AttachFrameType;

/// Ctrl-P Ctrl-Q, docker's detach keys.
constexpr char kDetach1 = 0x10, kDetach2 = 0x11;

/// Reads what the supervisor sent: output to fd 1, an exec's stderr to fd
/// 2, `exited` set by the exit frame. False when the connection is lost or
/// a frame is malformed.
bool readFromSupervisor(int sock, session::AttachFrameReader& reader, std::optional<int>& exited) {
  char buf[16384];
  ssize_t n = ::read(sock, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) return false;
  reader.feed(std::string_view(buf, static_cast<size_t>(n)));
  for (;;) {
    auto frame = reader.next();
    if (!frame) return false;
    if (!*frame) return true;
    const AttachFrame& f = **frame;
    if (f.type == AttachFrameType::kOutput) (void)writeAll(1, f.payload);
    else if (f.type == AttachFrameType::kStderr) (void)writeAll(2, f.payload);
    else if (f.type == AttachFrameType::kExit) exited = std::atoi(f.payload.c_str());
  }
}

int attachSession(const HostContext& host, const std::string& name) {
  auto dir = session::resolveSessionDir(host.dirs.state, name);
  if (!dir) return reportError(dir.error());
  auto sock = session::connectAttachSocket(*dir, name);
  if (!sock) return reportError(sock.error());
  sigset_t mask, saved;
  sigemptyset(&mask);
  for (int s : {SIGWINCH, SIGTERM, SIGHUP, SIGINT}) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, &saved);
  Fd signals(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  const bool tty = ::isatty(0) && ::isatty(1);
  // Frames for the supervisor wait here, never in a blocking write: an agent
  // that reads no input must not freeze this terminal or its detach keys.
  // The first says this is an attach.
  constexpr size_t kOutCap = size_t{1} << 20;  // keystrokes past this are dropped
  ::fcntl(sock->get(), F_SETFL, O_NONBLOCK);
  uint16_t rows = 0, cols = 0;
  std::string out = session::encodeAttachFrame(AttachFrameType::kAttach, {});
  if (tty && terminalSize(rows, cols)) out += session::encodeResize(rows, cols);
  std::fprintf(stderr, "airlock: attached to %s (Ctrl-P Ctrl-Q detaches)\r\n", name.c_str());
  std::optional<RawMode> raw;
  if (tty) raw.emplace();
  session::AttachFrameReader reader;
  std::optional<int> exited;
  bool detachArmed = false, detached = false, inputOpen = true, lost = false;
  char buf[16384];
  while (!exited && !detached && !lost) {
    short sockEvents = static_cast<short>(POLLIN | (out.empty() ? 0 : POLLOUT));
    pollfd fds[3] = {{sock->get(), sockEvents, 0}, {signals.get(), POLLIN, 0}, {inputOpen ? 0 : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if ((fds[0].revents & POLLOUT) && !out.empty()) {
      ssize_t n = ::send(sock->get(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) out.erase(0, static_cast<size_t>(n));
      else if (n < 0 && errno != EAGAIN && errno != EINTR) lost = true;
    }
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (::read(signals.get(), &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGWINCH) {
          if (tty && terminalSize(rows, cols)) out += session::encodeResize(rows, cols);
        } else {
          detached = true;  // a signal to this client detaches; the session goes on
        }
      }
    }
    if (fds[2].revents) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        // nothing this time
      } else if (n <= 0) {
        inputOpen = false;  // end of input: keep showing output until the command ends
      } else {
        std::string keys;
        for (ssize_t i = 0; i < n && !detached; ++i) {
          if (detachArmed && buf[i] == kDetach2) {
            detached = true;
            break;
          }
          if (detachArmed) keys += kDetach1;
          detachArmed = tty && buf[i] == kDetach1;
          if (!detachArmed) keys += buf[i];
        }
        if (!keys.empty() && out.size() < kOutCap) out += session::encodeAttachFrame(AttachFrameType::kInput, keys);
      }
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !readFromSupervisor(sock->get(), reader, exited))
      lost = true;
  }
  raw.reset();
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (detached) {
    std::fprintf(stderr, "\nairlock: detached from %s; it goes on (airlock attach %s to come back)\n", name.c_str(),
                 name.c_str());
    return 0;
  }
  if (exited) {
    std::fprintf(stderr, "\nairlock: %s's command exited with %d (`airlock ls` shows whether changes wait for "
                         "`airlock review %s`)\n", name.c_str(), *exited, name.c_str());
    return *exited;
  }
  return reportError(Error{fmt::format("lost the connection to session {} (airlock ls shows its state)", name),
                           exit_code::kVmFailed});
}

/// `airlock exec`: `argv` in the session's VM as the agent's user, with the
/// agent's environment, in its working directory; stdin forwarded with
/// `interactive`, a pty with `tty` (raw mode, window size). Returns the
/// command's exit code.
int execInSession(const HostContext& host, const std::string& name, const std::vector<std::string>& argv,
                  bool interactive, bool tty) {
  if (argv.empty())
    return reportError(Error{"exec needs a command: airlock exec NAME -- CMD [ARGS...]", exit_code::kUsage});
  auto dir = session::resolveSessionDir(host.dirs.state, name);
  if (!dir) return reportError(dir.error());
  auto sock = session::connectAttachSocket(*dir, name);
  if (!sock) return reportError(sock.error());
  tty = tty && ::isatty(0) && ::isatty(1);
  session::ExecStart start;
  start.argv = argv;
  start.tty = tty;
  if (tty) terminalSize(start.rows, start.cols);
  if (!writeAll(sock->get(), session::encodeExecStart(start)))
    return reportError(Error{"the session's supervisor went away", exit_code::kVmFailed});
  if (!interactive) (void)writeAll(sock->get(), session::encodeAttachFrame(AttachFrameType::kCloseInput, ""));
  sigset_t mask, saved;
  sigemptyset(&mask);
  sigaddset(&mask, SIGWINCH);
  pthread_sigmask(SIG_BLOCK, &mask, &saved);
  Fd signals(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  std::optional<RawMode> raw;
  if (tty && interactive) raw.emplace();
  session::AttachFrameReader reader;
  std::optional<int> exited;
  bool inputOpen = interactive, lost = false;
  char buf[16384];
  while (!exited && !lost) {
    pollfd fds[3] = {{sock->get(), POLLIN, 0}, {signals.get(), POLLIN, 0}, {inputOpen ? 0 : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (::read(signals.get(), &info, sizeof info) == sizeof info) {
        uint16_t rows, cols;
        if (tty && terminalSize(rows, cols)) (void)writeAll(sock->get(), session::encodeResize(rows, cols));
      }
    }
    if (fds[2].revents) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n <= 0) {
        inputOpen = false;
        (void)writeAll(sock->get(), session::encodeAttachFrame(AttachFrameType::kCloseInput, ""));
      } else {
        for (ssize_t at = 0; at < n; at += static_cast<ssize_t>(session::kMaxFramePayload)) {
          std::string_view piece(buf + at, static_cast<size_t>(std::min<ssize_t>(n - at, session::kMaxFramePayload)));
          if (!writeAll(sock->get(), session::encodeAttachFrame(AttachFrameType::kInput, piece))) lost = true;
        }
      }
    }
    if (fds[0].revents && !readFromSupervisor(sock->get(), reader, exited)) lost = true;
  }
  raw.reset();
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (exited) return *exited;
  return reportError(Error{fmt::format("the session {} ended before the command did", name), exit_code::kVmFailed});
}

int showLogs(const HostContext& host, const std::string& name, bool follow, bool rawOutput) {
  auto dir = session::resolveSessionDir(host.dirs.state, name);
  if (!dir) return reportError(dir.error());
  session::SessionLayout layout{*dir};
  Fd in(::open(layout.output().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in && !follow)
    return reportError(Error{fmt::format("session {} has no terminal output (only detached sessions record it; its "
                                         "log is {})", name, layout.log()),
                             exit_code::kUsage});
  TerminalTextFilter filter;
  char buf[65536];
  for (;;) {
    if (!in) in.reset(::open(layout.output().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    ssize_t n = in ? ::read(in.get(), buf, sizeof buf) : 0;
    if (n > 0) {
      std::string_view got(buf, static_cast<size_t>(n));
      if (!writeAll(1, rawOutput ? std::string(got) : filter.feed(got))) return 0;  // the reader went away
      continue;
    }
    // At the end: done, unless following a session that still runs.
    if (!follow || !session::sessionRunning(*dir)) {
      // One more read: what was written just before it ended.
      while (in && (n = ::read(in.get(), buf, sizeof buf)) > 0)
        (void)writeAll(1, rawOutput ? std::string(buf, static_cast<size_t>(n))
                                    : filter.feed(std::string_view(buf, static_cast<size_t>(n))));
      if (!rawOutput) (void)writeAll(1, filter.finish());
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

void addAttachCommands(CLI::App& app, int& exitCode, const HostContext& host,
                       const std::vector<std::string>& afterDoubleDash) {
  struct ExecArgs {
    std::string name;
    bool interactive = false, tty = false;
  };
  auto exec = std::make_shared<ExecArgs>();
  auto* execCmd = app.add_subcommand("exec", "Run another command in a running session's VM");
  execCmd->footer(R"(Usage: airlock exec [-i] [-t] NAME -- CMD [ARGS...]

The command runs next to the agent, as its user, with its environment, in its
working directory (/workspace), on the same snapshot: what it changes is part of
the session's changes. Exits with the command's code. -i forwards your input,
-t gives it a terminal (both, as -it, for an interactive program).

Examples:
  airlock exec tests -- git -C /workspace status
  airlock exec -it tests -- sh)");
  execCmd->add_option("name", exec->name, "Session name or id")->required();
  execCmd->add_flag("-i,--interactive", exec->interactive, "Forward standard input");
  execCmd->add_flag("-t,--tty", exec->tty, "A terminal for the command (when yours is one)");
  execCmd->callback([exec, &host, &exitCode, &afterDoubleDash] {
    exitCode = execInSession(host, exec->name, afterDoubleDash, exec->interactive, exec->tty);
  });

  auto shellName = std::make_shared<std::string>();
  auto* shell = app.add_subcommand("shell", "A shell in a running session's VM (airlock exec -it NAME -- bash -l)");
  shell->footer(R"(bash as a login shell where the image has it, else sh. A new session of its own with
the shell agent (bash in airlock's Debian image, on a snapshot of this directory) is
`airlock run shell`.)");
  shell->add_option("name", *shellName, "Session name or id (`airlock ls`)")->required();
  shell->callback([shellName, &host, &exitCode] {
    exitCode = execInSession(host, *shellName,
                             {"/bin/sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash -l; exec sh -l"}, true,
                             true);
  });

  auto attachName = std::make_shared<std::string>();
  auto* attach = app.add_subcommand("attach", "Connect your terminal to a detached session's agent");
  attach->footer(R"(Ctrl-P Ctrl-Q detaches and leaves the agent running; the window size follows yours.
When the agent exits, attach exits with its code and the changes wait for
`airlock review NAME`.)");
  attach->add_option("name", *attachName, "Session name or id")->required();
  attach->callback([attachName, &host, &exitCode] { exitCode = attachSession(host, *attachName); });

  struct LogsArgs {
    std::string name;
    bool follow = false, raw = false;
  };
  auto logs = std::make_shared<LogsArgs>();
  auto* logsCmd = app.add_subcommand("logs", "Print a detached session's terminal output");
  logsCmd->footer(R"(Escape sequences (colors, cursor moves, titles) and control characters are dropped,
and anything invisible is shown escaped, so the agent's output cannot drive your
terminal; --raw prints the bytes as the agent wrote them. The session's own log
(what airlock did) is SESSION/session.log.)");
  logsCmd->add_option("name", logs->name, "Session name or id")->required();
  logsCmd->add_flag("-f,--follow", logs->follow, "Keep printing until the session ends");
  logsCmd->add_flag("--raw", logs->raw, "The output as written, escape sequences included");
  logsCmd->callback([logs, &host, &exitCode] { exitCode = showLogs(host, logs->name, logs->follow, logs->raw); });
}

}  // namespace airlock::cli
