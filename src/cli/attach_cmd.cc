// `airlock attach NAME` and `airlock logs NAME`: a detached session's
// terminal, live (its supervisor's attach socket, session/attach_frames.h)
// or as it was recorded (SessionLayout::output()).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
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

using session::AttachFrameType;

/// Ctrl-P Ctrl-Q, docker's detach keys.
constexpr char kDetach1 = 0x10, kDetach2 = 0x11;

bool windowSize(uint16_t& rows, uint16_t& cols) {
  winsize ws{};
  if (::ioctl(1, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0) return false;
  rows = ws.ws_row;
  cols = ws.ws_col;
  return true;
}

int attachSession(const HostContext& host, const std::string& name) {
  auto dir = session::resolveSessionDir(host.dirs.state, name);
  if (!dir) return reportError(dir.error());
  auto sock = session::connectAttachSocket(*dir);
  if (!sock) return reportError(sock.error());
  sigset_t mask, saved;
  sigemptyset(&mask);
  for (int s : {SIGWINCH, SIGTERM, SIGHUP, SIGINT}) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, &saved);
  Fd signals(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  const bool tty = ::isatty(0) && ::isatty(1);
  uint16_t rows = 0, cols = 0;
  if (tty && windowSize(rows, cols)) (void)writeAll(sock->get(), session::encodeResize(rows, cols));
  std::fprintf(stderr, "airlock: attached to %s (Ctrl-P Ctrl-Q detaches)\r\n", name.c_str());
  std::optional<RawMode> raw;
  if (tty) raw.emplace();
  session::AttachFrameReader reader;
  std::optional<int> exited;
  bool detachArmed = false, detached = false, inputOpen = true, lost = false;
  char buf[16384];
  while (!exited && !detached && !lost) {
    pollfd fds[3] = {{sock->get(), POLLIN, 0}, {signals.get(), POLLIN, 0}, {inputOpen ? 0 : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (::read(signals.get(), &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGWINCH) {
          if (tty && windowSize(rows, cols)) (void)writeAll(sock->get(), session::encodeResize(rows, cols));
        } else {
          detached = true;  // a signal to this client detaches; the session goes on
        }
      }
    }
    if (fds[2].revents) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n <= 0) {
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
        if (!keys.empty() && !writeAll(sock->get(), session::encodeAttachFrame(AttachFrameType::kInput, keys)))
          lost = true;
      }
    }
    if (fds[0].revents) {
      ssize_t n = ::read(sock->get(), buf, sizeof buf);
      if (n <= 0) {
        lost = true;
        break;
      }
      reader.feed(std::string_view(buf, static_cast<size_t>(n)));
      for (;;) {
        auto frame = reader.next();
        if (!frame || !*frame) {
          lost = !frame;
          break;
        }
        if ((*frame)->type == AttachFrameType::kOutput) (void)writeAll(1, (*frame)->payload);
        else if ((*frame)->type == AttachFrameType::kExit) exited = std::atoi((*frame)->payload.c_str());
      }
    }
  }
  raw.reset();
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (detached) {
    std::fprintf(stderr, "\nairlock: detached from %s; it goes on (airlock attach %s to come back)\n", name.c_str(),
                 name.c_str());
    return 0;
  }
  if (exited) {
    std::fprintf(stderr, "\nairlock: %s's command exited with %d; its changes wait for `airlock review %s`\n",
                 name.c_str(), *exited, name.c_str());
    return *exited;
  }
  std::fprintf(stderr, "\nairlock: the session %s ended (see airlock ls)\n", name.c_str());
  return 0;
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

void addAttachCommands(CLI::App& app, int& exitCode, const HostContext& host) {
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
