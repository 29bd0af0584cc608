#include "cli/terminal_ui.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "cli/attach.h"
#include "cli/review_output.h"
#include "cli/terminal_reset.h"

namespace airlock::cli {

Fd openReviewTerminal() {
  Fd tty(::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (tty || !::isatty(0) || !::isatty(1)) return tty;
  struct stat in {}, out {};
  if (::fstat(0, &in) != 0 || ::fstat(1, &out) != 0 || in.st_rdev != out.st_rdev) return tty;
  return Fd(::open("/proc/self/fd/0", O_RDWR | O_NOCTTY | O_CLOEXEC));
}

namespace {

/// The review terminal: FdTerminal on the user's terminal, reset and with
/// type-ahead dropped right before the first question.
class TtyReviewTerminal final : public workspace::FdTerminal {
 public:
  TtyReviewTerminal(int fd, std::string pager) : FdTerminal(fd, std::move(pager)), fd_(fd) {}
  void begin() override { prepareReviewTerminal(fd_); }

 private:
  int fd_;
};

}  // namespace

TerminalUi::TerminalUi(const HostContext& host, bool quiet) : host_(host), quiet_(quiet) {}

TerminalUi::~TerminalUi() = default;

void TerminalUi::progress(const std::string& line) {
  if (!quiet_) std::fprintf(stderr, "airlock: %s\n", line.c_str());
}

void TerminalUi::notice(const std::string& line) {
  if (!quiet_) std::fprintf(stderr, "airlock: note: %s\n", line.c_str());
}

void TerminalUi::warn(const std::string& line) { std::fprintf(stderr, "airlock: warning: %s\n", line.c_str()); }

void TerminalUi::say(const std::string& line) { std::fprintf(stderr, "airlock: %s\n", line.c_str()); }

Result<session::Attached> TerminalUi::attach(vm::Sandbox& sandbox, protocol::ExecRequest request, bool pty) {
  return attachCommand(sandbox, std::move(request), pty);
}

workspace::ReviewTerminal* TerminalUi::reviewTerminal() {
  if (!term_) {
    tty_ = openReviewTerminal();
    if (!tty_) return nullptr;
    term_ = std::make_unique<TtyReviewTerminal>(tty_.get(), host_.terminal.pager);
  }
  return term_.get();
}

void TerminalUi::reviewed(const workspace::GateOutcome& outcome, const std::string& workspace) {
  // The run's stdout is the agent's output (a script may be parsing it).
  std::fflush(stdout);
  printReviewText(stderr, outcome, workspace);
}

void TerminalUi::blockedEgress(const std::vector<std::string>& lines, const std::string& details) {
  if (quiet_ || lines.empty()) return;
  std::fprintf(stderr, "airlock: egress blocked during this session (details: %s):\n", details.c_str());
  for (const auto& line : lines) std::fprintf(stderr, "airlock:   %s\n", line.c_str());
}

}  // namespace airlock::cli
