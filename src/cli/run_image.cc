// `airlock run-image [OPTIONS] IMAGE [-- CMD ARGS...]` (an OCI image by
// reference, pulled into the image store when missing) and
// `airlock run-image --rootfs DIR [OPTIONS] -- CMD ARGS...`.

#include "cli/run_image.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/attach.h"
#include "cli/commands.h"
#include "cli/image_provider.h"
#include "cli/repeatable.h"
#include "cli/report.h"
#include "cli/review_output.h"
#include "cli/run_flags.h"
#include "cli/session_flags.h"
#include "cli/terminal_ui.h"
#include "common/exit_codes.h"
#include "config/egress_plan.h"
#include "image/oci/image_pull.h"
#include "image/oci/image_store.h"
#include "session/runner.h"
#include "session/session.h"
#include "session/supervisor.h"
#include "vm/guest_contract.h"
#include "vm/machine.h"

namespace airlock::cli {
namespace {

// The image's config applied to the exec request: entrypoint + (CMD from the
// command line, else the image's cmd), its env, workdir and user.
struct ImageDefaults {
  std::string erofs;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string workdir;
  unsigned uid = 0;
  unsigned gid = 0;
};

Result<ImageDefaults> prepareImage(const HostContext& host, const RunImageArgs& args) {
  auto ref = image::oci::parseImageRef(args.image);
  if (!ref) return std::unexpected(ref.error());
  auto settings = userSettings(host);
  if (!settings) return std::unexpected(settings.error());
  auto pulled = pullVerified(host, args.image, args.registry, *settings, args.quiet);
  if (!pulled) return std::unexpected(pulled.error());
  image::oci::ImageStore::inCache(host.dirs.cache).markUsed(pulled->record.manifestDigest);
  const auto& config = pulled->record.config;
  ImageDefaults d;
  d.erofs = pulled->erofsPath;
  d.argv = config.entrypoint;
  const auto& cmd = args.command.empty() ? config.cmd : args.command;
  d.argv.insert(d.argv.end(), cmd.begin(), cmd.end());
  if (d.argv.empty())
    return failWith(exit_code::kUsage, "{} has no entrypoint or cmd; give a command: airlock run-image {} -- CMD",
                    ref->str(), args.image);
  d.env = config.env;
  d.workdir = config.workingDir;
  d.uid = pulled->record.user.uid;
  d.gid = pulled->record.user.gid;
  return d;
}

bool hasEnv(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e.starts_with(name) && e[name.size()] == '=') return true;
  return false;
}

/// `airlock run-image`'s plan. Pulls the image first: its config (entrypoint,
/// env, workdir, user) is part of the command.
Result<session::Plan> planRunImage(const HostContext& host, const RunImageArgs& args) {
  session::Plan plan;
  if (!vm::parseAccel(args.accel, plan.machine.accel))
    return failWith(exit_code::kUsage, "--accel must be auto, kvm or tcg (got '{}')", args.accel);
  // Before a pull or a boot: a KVM that cannot work would only time out.
  if (auto r = vm::checkAccelRequest(plan.machine.accel, vm::probeHost()); !r) return std::unexpected(r.error());
  plan.pty = usePty(host, args.tty);
  auto policy = imagePolicy(args.egress);
  if (!policy) return std::unexpected(policy.error());
  if (!args.review.empty() && args.workspace.empty())
    return failWith(exit_code::kUsage, "--review needs a workspace: add -w DIR");
  if (!args.git.empty() && args.review.empty())
    return failWith(exit_code::kUsage, "--git applies to a review: add -w DIR --review=MODE");
  plan.name = args.detached.name;
  plan.label = "run-image";
  plan.detached = args.detached.supervise;
  if (plan.detached) {
    plan.pty = args.tty != "never";  // for `airlock attach`
  } else if (!args.review.empty()) {
    auto review = chooseReview(host, args.review, args.acceptFailed);
    if (!review) return std::unexpected(review.error());
    plan.review = *review;
    if (!args.git.empty()) plan.review.gitImport = *workspace::parseGitImportMode(args.git);
  } else if (args.acceptFailed) {
    return failWith(exit_code::kUsage, "--accept-failed applies to --review=auto or --review=all only");
  }
  plan.review.who = "the command";
  auto published = parseHostPorts(args.egress.publish, "--publish");
  if (!published) return std::unexpected(published.error());
  auto envs = envFlags(host, args.env, "-e");
  if (!envs) return std::unexpected(envs.error());

  ImageDefaults image;
  image.argv = args.command;
  image.uid = image.gid = args.user;
  if (!args.image.empty()) {
    auto prepared = prepareImage(host, args);
    if (!prepared) return std::unexpected(withCode(prepared.error(), exit_code::kImage));
    image = std::move(*prepared);
    if (args.userGiven) image.uid = image.gid = args.user;
    plan.image = {session::ImageSource::Kind::kErofs, image.erofs};
  } else {
    plan.image = {session::ImageSource::Kind::kRootfsDir, args.rootfs};
  }
  protocol::ExecRequest& request = plan.exec;
  request.argv = image.argv;
  request.env = image.env;
  if (!hasEnv(request.env, "PATH")) request.env.push_back(std::string("PATH=") + guest::kDefaultPath);
  if (!hasEnv(request.env, "HOME"))
    request.env.push_back(image.uid == 0 ? "HOME=/root" : std::string("HOME=") + guest::kAgentHome);
  if (plan.pty) request.env.push_back("TERM=" + (host.terminal.term.empty() ? "xterm-256color" : host.terminal.term));
  for (const auto& [name, value] : *envs) request.env.push_back(name + "=" + value);
  request.uid = image.uid;
  request.gid = image.gid;
  request.cwd = !args.workdir.empty()     ? args.workdir
                : !args.workspace.empty() ? guest::kWorkspace
                : !image.workdir.empty()  ? image.workdir
                                          : "/";

  plan.workspace = args.workspace;
  plan.workspaceMode = !args.review.empty() || plan.detached ? session::WorkspaceMode::kSnapshot
                       : !args.workspace.empty()             ? session::WorkspaceMode::kShared
                                                             : session::WorkspaceMode::kNone;
  if (plan.workspaceMode == session::WorkspaceMode::kShared && !args.quiet)
    std::fprintf(stderr,
                 "airlock: warning: -w shares %s as it is, secret files (.env, keys) included; add "
                 "--review=MODE to give the command a snapshot without them\n",
                 args.workspace.c_str());
  plan.machine.cpus = args.cpus;
  plan.machine.memoryMiB = args.memory;
  plan.machine.egress = *policy;
  plan.machine.publish = *published;
  plan.machineProgress = true;
  plan.egressLogShown = args.egress.log;
  return plan;
}

int runImage(const HostContext& host, const RunImageArgs& args, const std::vector<std::string>& invocation) {
  const DetachFlags& d = args.detached;
  if (d.detach || d.supervise) {
    if (args.workspace.empty())
      return reportError(
          Error{"run-image -d needs -w DIR: a detached session works on a snapshot of it, reviewed "
                "later with `airlock review NAME`",
                exit_code::kUsage});
    if (!args.review.empty() || args.acceptFailed || !args.git.empty())
      return reportError(
          Error{"a detached session is reviewed later: drop --review/--accept-failed/--git and run "
                "`airlock review NAME` when it has ended",
                exit_code::kUsage});
    if (!d.supervise) return startDetached(invocation);
  }
  // The supervisor's signals are set up before planning starts any thread.
  std::optional<session::DetachedUi> detached;
  if (d.supervise) detached.emplace(args.quiet);
  auto plan = planRunImage(host, args);
  if (!plan) return reportError(plan.error());
  if (detached) {
    CliImageProvider images(host, args.registry, config::Settings{}, agents::AgentSpec{}, *detached, args.quiet);
    session::Runner runner(std::move(*plan), {host, *detached, launchMachine(host), images});
    return superviseSession(runner, *detached, true);
  }
  TerminalUi ui(host, args.quiet);
  CliImageProvider images(host, args.registry, config::Settings{}, agents::AgentSpec{}, ui, args.quiet);
  session::Runner runner(std::move(*plan), {host, ui, launchMachine(host), images});
  auto outcome = runner.run();
  if (!outcome) return reportError(outcome.error());
  if (outcome->review) printResumeHint(*outcome->review, host.dirs.state, outcome->sessionDir);
  return outcome->exitCode;
}

}  // namespace

void addRunImageOptions(CLI::App& cmd, RunImageArgs& args) {
  cmd.add_option("--rootfs", args.rootfs, "Host directory holding the guest's root filesystem (needs /bin/sh)");
  addRegistryFlags(cmd, args.registry);
  cmd.add_option("--cpus", args.cpus, "vCPUs")->capture_default_str()->check(CLI::Range(1, 64));
  cmd.add_option("--memory", args.memory, "Guest memory in MiB")->capture_default_str()->check(CLI::Range(128, 65536));
  repeatable(
      cmd.add_option("-e,--env", args.env,
                     "Environment variable for the command: NAME=VALUE, or NAME to pass the host's value. Values "
                     "travel over the control channel, never on a command line"));
  cmd.add_option("-w,--workspace", args.workspace,
                 "Host directory at /workspace: shared read-only, or with --review a snapshot the command may change")
      ->check(CLI::ExistingDirectory);
  cmd.add_option("--review", args.review,
                 "With -w: the command edits a snapshot of the workspace and its changes go through the review "
                 "gate: interactive, auto (accept all but held-back paths), all, or none (keep them pending)")
      ->check(CLI::IsMember({"interactive", "auto", "all", "none"}));
  addGitFlag(cmd, args.git);
  cmd.add_option("--workdir", args.workdir, "Working directory in the guest (default /workspace with -w, else /)");
  cmd.add_option("--user", args.user, "uid (and gid) to run the command as (default: the image's user, else 0)");
  cmd.add_option("--accel", args.accel, "Accelerator: auto (KVM when usable, else TCG emulation), kvm or tcg")
      ->capture_default_str();
  cmd.add_option("--tty", args.tty, "Allocate a pty: auto (when stdin and stdout are terminals), always, never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd.add_flag("--accept-failed", args.acceptFailed,
               "With --review=auto/all: flush the changes even when the command exited non-zero");
  cmd.add_flag("-q,--quiet", args.quiet, "Do not print progress lines");
  addDetachFlags(cmd, args.detached);
  addEgressFlags(cmd, args.egress, "no network; locked when --allow-host, --host-port or --publish is given");
  // Everything from the first positional argument on (or after --) is IMAGE
  // and the command, passed to the guest untouched.
  cmd.prefix_command();
}

Result<> finishRunImageArgs(RunImageArgs& args, const CLI::App& cmd, const std::vector<std::string>& afterDoubleDash) {
  args.userGiven = cmd.get_option("--user")->count() > 0;
  args.command = cmd.remaining();
  // prefix_command() passes an unknown option on as if it began the guest
  // command: a typo like --cpu must be a usage error, not a guest command.
  if (!args.command.empty() && args.command.front().starts_with("-"))
    return failWith(exit_code::kUsage, "run-image: unknown option '{}' (see airlock run-image --help)",
                    args.command.front());
  if (args.rootfs.empty()) {
    if (args.command.empty())
      return failWith(exit_code::kUsage,
                      "run-image needs an IMAGE or --rootfs DIR: airlock run-image [OPTIONS] IMAGE [-- CMD...]");
    args.image = args.command.front();
    args.command.erase(args.command.begin());
    // `run-image IMAGE --cpus 2` would run "--cpus" in the guest after a boot.
    if (!args.command.empty() && args.command.front().starts_with("-"))
      return failWith(exit_code::kUsage,
                      "run-image: '{}' comes after IMAGE: options go before IMAGE, the command after -- "
                      "(airlock run-image [OPTIONS] {} -- CMD...)",
                      args.command.front(), args.image);
  }
  args.command.insert(args.command.end(), afterDoubleDash.begin(), afterDoubleDash.end());
  if (args.command.empty() && args.image.empty())
    return failWith(exit_code::kUsage, "run-image needs a command: airlock run-image --rootfs DIR -- CMD [ARGS...]");
  return {};
}

void addRunImageCommand(CLI::App& app, int& exitCode, const HostContext& host,
                        const std::vector<std::string>& afterDoubleDash, const std::vector<std::string>& invocation) {
  auto args = std::make_shared<RunImageArgs>();
  auto* cmd = app.add_subcommand("run-image", "Boot an image (or a root filesystem) in a microVM and run one command");
  cmd->footer(std::string(R"(Usage: airlock run-image [OPTIONS] IMAGE [-- CMD [ARGS...]]
       airlock run-image --rootfs DIR [OPTIONS] -- CMD [ARGS...]

Options go before IMAGE: the first word that is not an option is IMAGE, and
the command goes after `--` (an option after IMAGE is refused, exit 64).
Repeatable options (-e, --allow-host, --host-port, --publish,
--insecure-registry) take one value each time: -e A=1 -e B=2.

IMAGE is an OCI/Docker image reference (ubuntu:24.04, ghcr.io/org/app@sha256:...), pulled
into the image store when missing (--pull). Its entrypoint, cmd, env, working directory
and user are honoured: CMD replaces the image's cmd, as with docker run. No host
environment is forwarded unless -e NAME is given. A --rootfs directory is turned into a
read-only erofs image (cached by content) instead. Writes inside the VM go to a scratch
disk that is thrown away when the command exits. The command's exit code is airlock's
(128+N when it was killed by signal N).

With -w DIR the directory is shared read-only at /workspace; add --review=MODE and the
command works on a snapshot of it instead, and what it changed goes through the same
review gate as `airlock run` (exit 70 when changes are left pending, 71 on a conflict).

The guest has no network unless an egress flag is given; then it goes through the
egress firewall with --egress-profile (default locked: only the --allow-host hosts).

Examples:
  airlock run-image docker.io/library/busybox -- echo hi
  airlock run-image --pull=always 127.0.0.1:5000/team/tools:dev
  airlock run-image --allow-host deb.debian.org:80 debian:12 -- apt-get update
  airlock run-image --rootfs ./rootfs -- sh -c 'echo hi; exit 3'
  airlock run-image --rootfs ./rootfs -w . --cpus 2 --memory 1024 -- make test
  airlock run-image -w . --review=auto node:22 -- npx prettier --write .
  airlock run-image --rootfs ./rootfs -e TOKEN -e MODE=ci -- ./deploy-check)") +
              "\n\nEnding a session: " + kEscapeHelp + ".");
  addRunImageOptions(*cmd, *args);
  cmd->callback([args, cmd, &host, &exitCode, &afterDoubleDash, &invocation] {
    if (auto r = finishRunImageArgs(*args, *cmd, afterDoubleDash); !r) {
      exitCode = reportError(r.error());
      return;
    }
    exitCode = runImage(host, *args, invocation);
  });
}

}  // namespace airlock::cli
