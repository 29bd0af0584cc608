#include "cli/secret_input.h"

#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>

#include "common/exit_codes.h"
#include "secrets/secret_store.h"

namespace airlock::cli {
namespace {

/// The terminal's settings while the prompt has echo off, restored by the
/// prompt and by the handlers of the signals that would end airlock there.
termios gSavedTerminal{};
volatile sig_atomic_t gTerminalChanged = 0;

void restoreTerminalAndDie(int sig) {
  if (gTerminalChanged) ::tcsetattr(0, TCSAFLUSH, &gSavedTerminal);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

/// One line typed at the terminal, without echo: byte by byte (no line
/// length limit), backspace edits, Ctrl-U clears, Enter ends, Ctrl-C
/// aborts (exit 130), Ctrl-D on an empty line ends input. A paste of
/// several lines is refused (the rest would otherwise be lost or reach the
/// shell), and so is a line with another control key in it (an arrow,
/// Ctrl-W: unseen, it would be stored as typed).
Result<std::string> promptValue(const std::string& name, const std::string& command) {
  std::fprintf(stderr, "Enter %s (not shown): ", name.c_str());
  std::fflush(stderr);
  std::string value;
  bool raw = ::tcgetattr(0, &gSavedTerminal) == 0;
  if (raw) {
    for (int sig : {SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, restoreTerminalAndDie);
    termios quiet = gSavedTerminal;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | ISIG | IEXTEN);
    quiet.c_cc[VMIN] = 1;
    quiet.c_cc[VTIME] = 0;
    gTerminalChanged = ::tcsetattr(0, TCSAFLUSH, &quiet) == 0;
  }
  Result<std::string> out = std::unexpected(Error{});
  bool controlKey = false;
  for (;;) {
    char c;
    ssize_t n = ::read(0, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == 4) {  // end of input, Ctrl-D
      out = std::move(value);
      break;
    }
    if (c == 3) {  // Ctrl-C
      out = failWith(130, "interrupted; nothing stored");
      break;
    }
    if (c == '\r' || c == '\n') {
      pollfd more{0, POLLIN, 0};
      if (::poll(&more, 1, 50) > 0)
        out = failWith(exit_code::kUsage, "the value has more than one line; pipe it instead: {} < FILE", command);
      else if (controlKey)
        out = failWith(
            exit_code::kUsage,
            "what was typed holds a control key (an arrow, Ctrl-W...), which would be "
            "stored as it is; nothing stored: type it again (backspace and Ctrl-U edit), or pipe it: {} < FILE",
            command);
      else
        out = std::move(value);
      break;
    }
    if (c == 127 || c == 8) {
      if (!value.empty()) value.pop_back();
      continue;
    }
    if (c == 21) {  // Ctrl-U: the line so far goes
      value.clear();
      controlKey = false;
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') controlKey = true;
    if (value.size() > secrets::kMaxSecretBytes) continue;  // set() refuses it, without a partial value
    value.push_back(c);
  }
  if (gTerminalChanged) ::tcsetattr(0, TCSAFLUSH, &gSavedTerminal);
  gTerminalChanged = 0;
  std::fprintf(stderr, "\n");
  return out;
}

}  // namespace

Result<std::string> readSecretValue(const std::string& name, bool terminal, const std::string& command) {
  std::string value;
  if (terminal) {
    auto typed = promptValue(name, command);
    if (!typed) return typed;
    value = std::move(*typed);
  } else {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(0, buf, sizeof buf)) > 0 && value.size() <= secrets::kMaxSecretBytes)
      value.append(buf, static_cast<size_t>(n));
    if (n < 0) return failWith(exit_code::kUsage, "cannot read the value from standard input: {}", errnoText(errno));
    std::string_view body(value);
    if (body.ends_with("\r\n"))
      body.remove_suffix(2);
    else if (body.ends_with('\n'))
      body.remove_suffix(1);
    if (body.find('\n') == std::string_view::npos) value.resize(body.size());
  }
  if (value.empty())
    return failWith(exit_code::kUsage, "standard input held nothing: give {} there (e.g. `printenv TOKEN | {}`)", name,
                    command);
  return value;
}

}  // namespace airlock::cli
