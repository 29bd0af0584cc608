#pragma once
// The session UI at a terminal (session/ui.h): progress, notices and
// warnings as `airlock: ...` lines on stderr, the agent attached to the
// user's streams (cli/attach.h), the review asked on the controlling
// terminal (as `git add -p` does, so it works whatever stdin and stdout
// are), and the review's outcome as a table on stdout.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/host_context.h"
#include "session/ui.h"

namespace airlock::cli {

/// The session UI of a verb run at a terminal (see the file comment).
class TerminalUi final : public session::Ui {
 public:
  /// `quiet` drops progress lines, notices and the blocked-egress report.
  TerminalUi(const HostContext& host, bool quiet);
  ~TerminalUi() override;

  void progress(const std::string& line) override;
  void notice(const std::string& line) override;
  void warn(const std::string& line) override;
  void say(const std::string& line) override;
  Result<session::Attached> attach(vm::Sandbox& sandbox, protocol::ExecRequest request, bool pty) override;
  workspace::ReviewTerminal* reviewTerminal() override;
  void reviewed(const workspace::GateOutcome& outcome, const std::string& workspace) override;
  void blockedEgress(const std::vector<std::string>& lines, const std::string& details) override;

 private:
  const HostContext& host_;
  bool quiet_;
  Fd tty_;
  std::unique_ptr<workspace::ReviewTerminal> term_;
};

/// The user's terminal for a review: the controlling terminal, or, when there
/// is none (`su -c`, `setsid`) but stdin and stdout are the same terminal,
/// that terminal reopened for reading and writing. Invalid when neither.
Fd openReviewTerminal();

}  // namespace airlock::cli
