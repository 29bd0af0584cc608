#include "cli/login_vm.h"

#include <unistd.h>

#include <memory>

#include <fmt/format.h>

#include "cli/agent_home.h"
#include "cli/extra_ca.h"
#include "cli/image_provider.h"
#include "cli/registry_flags.h"
#include "cli/session_flags.h"
#include "cli/terminal_ui.h"
#include "common/exit_codes.h"
#include "config/egress_plan.h"
#include "config/loader.h"
#include "config/merge.h"
#include "session/runner.h"
#include "vm/guest_contract.h"

namespace airlock::cli {

Result<secrets::AgentLogin> loginInVm(const HostContext& host, const agents::AgentSpec& spec, bool quiet) {
  const agents::LoginSpec& how = spec.login;
  if (how.loginCommand.empty())
    return failWith(exit_code::kUsage, "{} has no login airlock can run in a VM; use `airlock login {} --from-host` "
                    "(or pipe a token in)", spec.name, spec.name);
  if (!host.terminal.stdinTty || !host.terminal.stdoutTty)
    return failWith(exit_code::kUsage, "the {} login runs interactively and needs a terminal; without one, use "
                    "--from-host or pipe a token in", spec.name);
  // The user's config only (a login has no workspace, hence no repo config):
  // its extra CA certificates and image verification.
  config::ConfigSources sources;
  sources.userPath = config::userConfigPath(host.dirs.config);
  auto user = config::loadConfigFile(sources.userPath);
  if (!user) return std::unexpected(user.error());
  sources.user = std::move(*user);
  config::Settings settings = config::resolve(spec, sources).settings;
  settings.egressProfile = {egress::Profile::kLocked, config::Layer::kBuiltin};
  settings.allowHosts.clear();
  settings.removeHosts.clear();

  // The login's hosts are the only ones the VM reaches.
  agents::AgentSpec loginSpec = spec;
  loginSpec.egress.modelHosts = how.loginHosts;
  loginSpec.egress.extraHosts.clear();
  loginSpec.envForward.clear();
  auto policy = config::egressPolicy(config::egressPlan(loginSpec, settings), {});
  if (!policy) return std::unexpected(policy.error());

  session::Plan plan;
  plan.workspaceMode = session::WorkspaceMode::kNone;
  if (!spec.image.reference.empty()) {
    plan.image = {session::ImageSource::Kind::kReference, spec.image.reference};
    plan.imageLine = "image " + spec.image.reference;
  } else {
    plan.image = {session::ImageSource::Kind::kAgentBuild, spec.name};
    plan.imageLine = "image for " + spec.name;
  }
  // As in `airlock run`: a user's own build of the image has a root-owned home.
  plan.chownHome = plan.image.kind != session::ImageSource::Kind::kAgentBuild || ::geteuid() != 0;
  plan.homeOnTmpfs = true;
  plan.pty = true;
  plan.machine.cpus = static_cast<unsigned>(spec.cpus);
  plan.machine.memoryMiB = static_cast<unsigned>(spec.memoryMib);
  plan.machine.scratchMiB = static_cast<unsigned>(spec.scratchMib);
  plan.machine.egress = *policy;
  plan.bootLine = fmt::format("booting {} to log in (egress: {} only)", spec.name, fmt::join(how.loginHosts, ", "));
  plan.commandLine = fmt::format("running `{}`", fmt::join(how.loginCommand, " "));
  plan.review.who = "the login";
  auto env = agentEnvironment(host, loginSpec, {}, true);
  if (!env) return std::unexpected(env.error());
  if (auto r = applyExtraCaCertificates(settings, plan, *env); !r) return std::unexpected(r.error());
  // The spec's home files, with the login's own laid over them.
  std::map<std::string, std::string> homeFiles = how.loginHomeFiles;
  homeFiles.insert(spec.homeFiles.begin(), spec.homeFiles.end());
  for (const auto& [path, content] : agents::expandFiles(homeFiles, *env)) plan.homeFiles.push_back({path, content});
  for (const auto& [path, content] : agents::expandFiles(spec.seedFiles, *env)) plan.seedFiles.push_back({path, content});
  plan.exec.argv = how.loginCommand;
  for (const auto& [k, v] : *env) plan.exec.env.push_back(k + "=" + v);
  plan.exec.uid = plan.exec.gid = guest::kAgentUid;
  plan.exec.cwd = guest::kAgentHome;

  // The credential file, and who is logged in, as the login left them:
  // checked after the run.
  struct Returned {
    std::string content, account;
  };
  auto returned = std::make_shared<std::optional<Returned>>();
  session::DeliveredCredential credential;
  credential.path = how.file;
  credential.accountPath = how.accountFile;
  credential.maxBytes = secrets::kMaxCredentialFileBytes;
  credential.returned = [returned](std::string_view content, std::string_view account) -> Result<bool> {
    *returned = Returned{std::string(content), std::string(account)};
    return false;
  };
  auto unreadable = std::make_shared<std::string>();
  credential.unreadable = [unreadable](const Error& why) { *unreadable = why.message; };
  plan.credential = std::move(credential);

  TerminalUi ui(host, quiet);
  if (!how.loginNote.empty()) ui.notice(how.loginNote);
  RegistryFlags registry;
  CliImageProvider images(host, registry, settings, spec, ui, quiet);
  session::Runner runner(std::move(plan), {host, ui, launchMachine(host), images});
  auto outcome = runner.run();
  if (!outcome) return std::unexpected(outcome.error());
  if (!*returned)
    return failWith(exit_code::kHostNotReady, "the {} login did not finish: `{}` exited {}, and ~/{} was not kept: {}",
                    spec.name, fmt::join(how.loginCommand, " "), outcome->commandCode, how.file,
                    unreadable->empty() ? "it was not read back" : *unreadable);
  auto login = secrets::loginFromCredentialFile(how.format, (*returned)->content);
  if (login && !(*returned)->account.empty())
    login->accountJson = secrets::accountFromFile((*returned)->account, how.accountKey);
  return login;
}

}  // namespace airlock::cli
