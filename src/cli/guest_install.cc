#include "cli/guest_install.h"

#include <unistd.h>

#include <fmt/ranges.h>

#include "cli/session_flags.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "config/egress_plan.h"
#include "session/layout.h"
#include "session/runner.h"
#include "session/session.h"
#include "vm/guest_contract.h"

namespace airlock::cli {
namespace {

/// The build VM boots an erofs file it is given: nothing to pull or build.
class NoImages final : public session::ImageProvider {
 public:
  Result<std::string> erofsImage(const session::ImageSource& source) override {
    return failWith(exit_code::kInternal, "a build VM needs no image from a provider ({})", source.value);
  }
};

/// The firewall of a build VM: locked, `hosts` only; none: no network.
Result<std::optional<egress::Policy>> buildVmPolicy(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return std::nullopt;
  config::Settings settings;
  settings.egressProfile = {egress::Profile::kLocked, config::Layer::kBuiltin};
  for (const auto& h : hosts) settings.allowHosts.push_back({h, config::Layer::kBuiltin});
  auto policy = config::egressPolicy(config::egressPlan(agents::AgentSpec{}, settings), {});
  if (!policy) return std::unexpected(policy.error());
  return std::optional(std::move(*policy));
}

Result<> runBuildVm(const HostContext& host, session::Ui& ui, const image::GuestInstall& install,
                    const image::ChangeSetConsumer& apply) {
  auto policy = buildVmPolicy(install.hosts);
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
  plan.commandLine = "running pip in the build VM";
  plan.review.who = "the build";
  plan.exec.argv = {"/bin/sh", "-c", install.script};
  plan.exec.env = {std::string("PATH=") + guest::kDefaultPath, "HOME=/root", "PIP_NO_INPUT=1"};
  plan.exec.uid = plan.exec.gid = 0;
  plan.exec.cwd = guest::kWorkspace;

  NoImages images;
  std::string sessionDir;
  Result<> done;
  {
    session::Runner runner(std::move(plan), {host, ui, launchMachine(host), images});
    auto ready = runner.prepare();
    sessionDir = runner.sessionDir();
    if (!ready) {
      done = std::unexpected(ready.error());
    } else if (auto code = runner.runCommand(); !code) {
      done = std::unexpected(code.error());
    } else if (*code != 0) {
      done = failWith(exit_code::kImage, "pip in the {} build VM failed (exit {}); its output is above", install.agent,
                      *code);
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
  ::unlink(session::lockPathFor(host.dirs.state, resolvedPath(install.workspace)).c_str());
  return done;
}

}  // namespace

image::GuestInstaller buildVmInstaller(const HostContext& host, session::Ui& ui) {
  return [&host, &ui](const image::GuestInstall& install, const image::ChangeSetConsumer& apply) {
    return runBuildVm(host, ui, install, apply);
  };
}

}  // namespace airlock::cli
