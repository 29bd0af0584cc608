#include "cli/guest_install.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/ranges.h>

#include "cli/egress_flags.h"
#include "cli/session_flags.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/interrupt.h"
#include "common/paths.h"
#include "session/layout.h"
#include "session/runner.h"
#include "session/session.h"
#include "vm/guest_contract.h"
#include "workspace/flush.h"

namespace airlock::cli {
namespace {

/// The build VM boots an erofs file it is given: nothing to pull or build.
class NoImages final : public session::ImageProvider {
 public:
  Result<std::string> erofsImage(const session::ImageSource& source) override {
    return failWith(exit_code::kInternal, "a build VM needs no image from a provider ({})", source.value);
  }
};

/// The caller's UI, but the build's command gets no input and its output
/// goes to stderr: it must not read what was meant for the agent (`airlock
/// run hermes < prompt`), nor write into what airlock prints on stdout (the
/// image path of `airlock image build`). The fds are swapped for the
/// attach, in this process: nothing else reads or writes them meanwhile.
class BuildVmUi final : public session::Ui {
 public:
  explicit BuildVmUi(session::Ui& inner) : inner_(inner) {}
  void progress(const std::string& line) override { inner_.progress(line); }
  void notice(const std::string& line) override { inner_.notice(line); }
  void warn(const std::string& line) override { inner_.warn(line); }
  void say(const std::string& line) override { inner_.say(line); }
  Result<session::Attached> attach(vm::Sandbox& sandbox, protocol::ExecRequest request, bool pty) override {
    ::fflush(stdout);
    Fd savedIn(::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3)), savedOut(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
    Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!savedIn || !savedOut || !null || ::dup2(null.get(), STDIN_FILENO) < 0 ||
        ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
      return failWith(exit_code::kImage, "cannot redirect the build VM's streams: {}", errnoText(errno));
    auto attached = inner_.attach(sandbox, std::move(request), pty);
    ::dup2(savedIn.get(), STDIN_FILENO);
    ::dup2(savedOut.get(), STDOUT_FILENO);
    return attached;
  }
  workspace::ReviewTerminal* reviewTerminal() override { return nullptr; }
  void reviewed(const workspace::GateOutcome&, const std::string&) override {}
  void blockedEgress(const std::vector<std::string>& lines, const std::string& details) override {
    inner_.blockedEgress(lines, details);
  }

 private:
  session::Ui& inner_;
};

Result<> runBuildVm(const HostContext& host, session::Ui& ui, const image::GuestInstall& install,
                    const image::ChangeSetConsumer& apply) {
  auto policy = imagePolicy({.allowHosts = install.hosts});  // locked, those hosts only; none: no network
  if (!policy) return std::unexpected(policy.error());
  session::Plan plan;
  plan.label = install.agent + "-build";
  plan.workspace = install.workspace;
  plan.workspaceMode = session::WorkspaceMode::kSnapshot;
  plan.image = {session::ImageSource::Kind::kErofs, install.image};
  plan.machine.cpus = 2;
  plan.machine.memoryMiB = 2048;
  plan.machine.scratchMiB = 8192;
  plan.machine.egress = std::move(*policy);
  plan.imageLine = "image: the " + install.agent + " base with python3";
  plan.bootLine = install.hosts.empty()
                      ? fmt::format("booting the {} build VM (no network)", install.agent)
                      : fmt::format("booting the {} build VM (egress: {} only)", install.agent,
                                    fmt::join(install.hosts, ", "));
  plan.commandLine = "installing in the build VM (python3 -m venv, then pip install)";
  plan.review.who = "the build";
  plan.exec.argv = {"/bin/sh", "-c", install.script};
  plan.exec.env = {std::string("PATH=") + guest::kDefaultPath, "HOME=/root", "PIP_NO_INPUT=1"};
  plan.exec.uid = plan.exec.gid = 0;
  plan.exec.cwd = guest::kWorkspace;

  NoImages images;
  BuildVmUi buildUi(ui);
  std::string sessionDir;
  Result<> done;
  {
    session::Runner runner(std::move(plan), {host, buildUi, launchMachine(host), images});
    auto ready = runner.prepare();
    sessionDir = runner.sessionDir();
    if (!ready) {
      done = std::unexpected(ready.error());
    } else if (auto code = runner.runCommand(); !code) {
      done = std::unexpected(code.error());
    } else if (isInterruption(*code)) {
      done =
          std::unexpected(interruptedError(*code - 128, fmt::format("the install in the {} build VM", install.agent)));
    } else if (*code != 0) {
      done = failWith(exit_code::kImage, "the install in the {} build VM failed (exit {}); pip's output is above",
                      install.agent, *code);
    } else if (auto exported = runner.exportChanges(); !exported) {
      done = std::unexpected(exported.error());
    } else {
      done = apply(session::SessionLayout{sessionDir}.changeSet());
    }
  }
  // The session was only the build's: nothing of it is kept.
  if (!sessionDir.empty()) {
    session::releaseSessionName(host.dirs.state, sessionDir);
    (void)removeTree(sessionDir);
  }
  const std::string workspace = resolvedPath(install.workspace);
  ::unlink(session::lockPathFor(host.dirs.state, workspace).c_str());
  ::unlink(workspace::flushLockPath(workspace, host.dirs.state).c_str());
  return done;
}

}  // namespace

image::GuestInstaller buildVmInstaller(const HostContext& host, session::Ui& ui) {
  return [&host, &ui](const image::GuestInstall& install, const image::ChangeSetConsumer& apply) {
    return runBuildVm(host, ui, install, apply);
  };
}

}  // namespace airlock::cli
