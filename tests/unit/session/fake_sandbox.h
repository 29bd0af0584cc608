#pragma once
// A sandbox without a VM (vm/sandbox.h): the "agent" is a canned exit code
// and a canned change set, plus an optional action run while it "runs" (a
// host edit made during the session). And a UI that records what it was
// told and answers nothing. Together they let the session runner's unit
// tests run every step without QEMU.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "session/runner.h"
#include "session/ui.h"
#include "vm/sandbox.h"

namespace airlock::session::test {

/// What FakeSandbox does and what it saw; shared with the test.
struct FakeScript {
  int agentCode = 0;                   ///< the command's exit code
  std::string changeSet;               ///< the OCI layer tar the export writes
  std::function<void()> whileRunning;  ///< runs when the agent command starts (e.g. a host edit)
  int helperCode = 0;                  ///< exit code of airlock's helper commands (sh -c ...)
  /// What a helper command writes to stdout (the state's tar for `tar -c`); none when unset.
  std::function<std::string(const protocol::ExecRequest&)> helperStdout;
  /// A helper command's exit code by request (overrides helperCode when set).
  std::function<int(const protocol::ExecRequest&)> helperExit;
  /// The output handlers of the last helper command, to deliver output after
  /// the runner gave up on it (a guest that keeps sending).
  vm::OutputHandlers lastHelperHandlers;
  std::optional<Error> exportError;    ///< the export fails with this
  std::vector<std::string> blocked;    ///< what the "firewall" blocked (hasEgress when non-empty)
  // What happened:
  std::vector<protocol::ExecRequest> execs;  ///< every command started, helpers included
  std::vector<std::string> stdinSeen;        ///< stdin each command got
  int exports = 0;
  bool forcedLimits = false;                 ///< the export ran with forcedExportLimits()
  int stops = 0;
};

/// One command of FakeSandbox: exits at once with the script's code for the
/// agent (argv[0] is not "sh"), 0 for helper commands.
class FakeCommand final : public vm::Command {
 public:
  FakeCommand(FakeScript& script, size_t index, int code) : script_(script), index_(index), code_(code) {}
  Result<> writeStdin(std::string_view data) override {
    script_.stdinSeen[index_].append(data);
    return {};
  }
  Result<size_t> writeStdinSome(std::string_view data) override {
    script_.stdinSeen[index_].append(data);
    return data.size();
  }
  Result<> closeStdin() override { return {}; }
  Result<> resize(uint16_t, uint16_t) override { return {}; }
  Result<> signal(int) override { return {}; }
  Result<protocol::ExitStatus> wait() override {
    protocol::ExitStatus status;
    status.value = static_cast<uint32_t>(code_);
    return status;
  }
  std::optional<Result<protocol::ExitStatus>> waitFor(std::chrono::milliseconds) override { return wait(); }
  std::string startError() const override { return ""; }

 private:
  FakeScript& script_;
  size_t index_;
  int code_;
};

class FakeSandbox final : public vm::Sandbox {
 public:
  explicit FakeSandbox(FakeScript& script) : script_(script) {}
  Result<std::shared_ptr<vm::Command>> exec(const protocol::ExecRequest& request,
                                            vm::OutputHandlers handlers) override {
    if (stopped_) return failWith(exit_code::kVmFailed, "the fake sandbox is stopped");
    script_.execs.push_back(request);
    script_.stdinSeen.emplace_back();
    bool agent = request.argv.empty() || request.argv[0] != "sh";
    if (agent && script_.whileRunning) script_.whileRunning();
    if (!agent && script_.helperStdout && handlers.onStdout) {
      const std::string out = script_.helperStdout(request);
      for (size_t at = 0; at < out.size(); at += 65536) handlers.onStdout(std::string_view(out).substr(at, 65536));
    }
    if (!agent) script_.lastHelperHandlers = handlers;
    int helper = script_.helperExit ? script_.helperExit(request) : script_.helperCode;
    return std::make_shared<FakeCommand>(script_, script_.execs.size() - 1, agent ? script_.agentCode : helper);
  }
  Result<uint64_t> exportWorkspace(const std::string& destPath, const vm::ExportLimits& limits) override {
    ++script_.exports;
    script_.forcedLimits = limits.idle == vm::forcedExportLimits().idle;
    if (script_.exportError) return std::unexpected(*script_.exportError);
    if (auto r = writeFileAtomic(destPath, script_.changeSet, 0600); !r) return std::unexpected(r.error());
    return script_.changeSet.size();
  }
  void stop() override {
    if (!stopped_) ++script_.stops;
    stopped_ = true;
  }
  std::string crashReason() const override { return "guest kernel panic"; }
  std::vector<std::string> blockedEgress() const override { return script_.blocked; }
  bool hasEgress() const override { return !script_.blocked.empty(); }

 private:
  FakeScript& script_;
  bool stopped_ = false;
};

/// A launcher that boots FakeSandbox, or fails with `bootError` when it is set.
inline SandboxLauncher fakeLauncher(FakeScript& script, std::optional<Error> bootError = std::nullopt,
                                    vm::LaunchOptions* seen = nullptr) {
  return [&script, bootError, seen](const vm::LaunchOptions& options) -> Result<std::unique_ptr<vm::Sandbox>> {
    if (seen) *seen = options;
    if (bootError) return std::unexpected(*bootError);
    return std::unique_ptr<vm::Sandbox>(std::make_unique<FakeSandbox>(script));
  };
}

/// A review terminal that answers every question with `answer` and records
/// when begin() came (it must come after the diff, before the first question).
class ScriptedTerminal final : public workspace::ReviewTerminal {
 public:
  void print(std::string_view text) override { shown += text; }
  std::optional<std::string> readLine() override {
    ++questions;
    if (begins == 0) questionBeforeBegin = true;
    return answer;
  }
  void page(const std::string& text) override { shown += text; }
  void begin() override { ++begins; }

  std::string answer = "a";
  std::string shown;
  int begins = 0, questions = 0;
  bool questionBeforeBegin = false;
};

/// A UI that records every line and attaches by running the command to its end.
class RecordingUi final : public Ui {
 public:
  explicit RecordingUi(const FakeScript& script) : script_(script) {}
  void progress(const std::string& line) override { lines.push_back("progress: " + line); }
  void notice(const std::string& line) override { lines.push_back("notice: " + line); }
  void warn(const std::string& line) override { lines.push_back("warning: " + line); }
  void say(const std::string& line) override { lines.push_back(line); }
  Result<Attached> attach(vm::Sandbox& sandbox, protocol::ExecRequest request, bool) override {
    if (attachError) return std::unexpected(*attachError);
    auto cmd = sandbox.exec(request, {});
    if (!cmd) return std::unexpected(cmd.error());
    auto status = (*cmd)->wait();
    if (!status) return std::unexpected(status.error());
    return Attached{status->shellCode(), forceEnd};
  }
  workspace::ReviewTerminal* reviewTerminal() override { return terminal; }
  void reviewed(const workspace::GateOutcome& outcome, const std::string&) override {
    shown.push_back(outcome.summary);
    stopsAtReview = script_.stops;
  }
  void blockedEgress(const std::vector<std::string>& summary, const std::string& details) override {
    blocked = summary;
    blockedDetails = details;
  }

  bool forceEnd = false;                    ///< attach reports that the user forced the end
  std::optional<Error> attachError;         ///< attach fails with this (a lost control channel)
  workspace::ReviewTerminal* terminal = nullptr;  ///< the review terminal handed out
  std::vector<std::string> lines;           ///< every line, prefixed with its kind
  std::vector<std::string> shown;           ///< the summaries of the reviews shown
  int stopsAtReview = -1;                   ///< sandbox stops counted when the review was shown
  std::vector<std::string> blocked;         ///< the blocked-egress report
  std::string blockedDetails;

 private:
  const FakeScript& script_;
};

/// An ImageProvider that hands out one path for everything.
class FixedImages final : public ImageProvider {
 public:
  Result<std::string> erofsImage(const ImageSource&) override { return std::string("/fake/root.erofs"); }
};

}  // namespace airlock::session::test
