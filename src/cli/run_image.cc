// `airlock run-image [OPTIONS] IMAGE [-- CMD ARGS...]` (an OCI image by
// reference, pulled into the image store when missing) and
// `airlock run-image --rootfs DIR [OPTIONS] -- CMD ARGS...`.

#include "cli/run_image.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/attach.h"
#include "cli/commands.h"
#include "cli/repeatable.h"
#include "cli/session_job.h"
#include "common/exit_codes.h"
#include "config/egress_plan.h"
#include "image/oci/image_pull.h"
#include "image/oci/image_store.h"
#include "image/rootfs_image.h"
#include "vm/launcher.h"

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

/// The guest's network: none unless an egress flag (or --publish) is given;
/// then the egress firewall with --egress-profile (default locked: only
/// --allow-host hosts).
Result<std::optional<egress::Policy>> imagePolicy(const EgressFlags& flags) {
  if (auto r = checkAllowHosts(flags); !r) return std::unexpected(r.error());
  if (flags.profile.empty() && flags.allowHosts.empty() && flags.hostPorts.empty() && flags.publish.empty())
    return std::nullopt;
  auto hostPorts = parseHostPorts(flags.hostPorts);
  if (!hostPorts) return std::unexpected(hostPorts.error());
  config::Settings settings;
  settings.egressProfile = {flags.profile.empty() ? egress::Profile::kLocked : *egress::parseProfile(flags.profile),
                            config::Layer::kFlag};
  for (const auto& host : flags.allowHosts) settings.allowHosts.push_back({host, config::Layer::kFlag});
  auto policy = config::egressPolicy(config::egressPlan(agents::AgentSpec{}, settings), std::move(*hostPorts));
  if (!policy) return std::unexpected(policy.error());
  policy->log = flags.log;
  return std::optional(std::move(*policy));
}

bool hasEnv(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e.starts_with(name) && e[name.size()] == '=') return true;
  return false;
}

int runImage(const HostContext& host, const RunImageArgs& args) {
  vm::AccelRequest accel;
  if (!vm::parseAccel(args.accel, accel)) {
    std::fprintf(stderr, "airlock: --accel must be auto, kvm or tcg (got '%s')\n", args.accel.c_str());
    return exit_code::kUsage;
  }
  // Before a pull or a boot: a KVM that cannot work would only time out.
  if (auto r = vm::checkAccelRequest(accel, vm::probeHost()); !r) {
    std::fprintf(stderr, "airlock: %s\n", r.error().message.c_str());
    return r.error().code;
  }
  bool usePty = args.tty == "always" || (args.tty == "auto" && interactiveTerminal());
  auto policy = imagePolicy(args.egress);
  if (!policy) {
    std::fprintf(stderr, "airlock: %s\n", policy.error().message.c_str());
    return policy.error().code;
  }
  if (args.acceptFailed && args.review != "auto" && args.review != "all") {
    std::fprintf(stderr, "airlock: --accept-failed applies to -w DIR --review=auto or --review=all only\n");
    return exit_code::kUsage;
  }
  if (!args.review.empty() && args.workspace.empty()) {
    std::fprintf(stderr, "airlock: --review needs a workspace: add -w DIR\n");
    return exit_code::kUsage;
  }
  if (args.review == "interactive" && !haveControllingTerminal()) {
    std::fprintf(stderr, "airlock: --review=interactive needs a terminal; pass --review=auto or --review=none\n");
    return exit_code::kUsage;
  }
  ImageDefaults image;
  image.argv = args.command;
  image.uid = image.gid = args.user;
  if (!args.image.empty()) {
    auto prepared = prepareImage(host, args);
    if (!prepared) {
      std::fprintf(stderr, "airlock: %s\n", prepared.error().message.c_str());
      return prepared.error().code == 1 ? exit_code::kImage : prepared.error().code;
    }
    image = std::move(*prepared);
    if (args.userGiven) image.uid = image.gid = args.user;
  }
  protocol::ExecRequest request;
  request.argv = image.argv;
  request.env = image.env;
  if (!hasEnv(request.env, "PATH")) request.env.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  if (!hasEnv(request.env, "HOME")) request.env.push_back(image.uid == 0 ? "HOME=/root" : "HOME=/home/agent");
  if (usePty) {
    const char* term = std::getenv("TERM");
    request.env.push_back(std::string("TERM=") + (term && *term ? term : "xterm-256color"));
  }
  for (const auto& e : args.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      // -e NAME forwards the host's value, like docker run -e NAME.
      const char* value = std::getenv(e.c_str());
      if (eq == 0 || !value) {
        std::fprintf(stderr, "airlock: -e %s: use NAME=VALUE, or NAME for a variable set in your environment\n",
                     e.c_str());
        return exit_code::kUsage;
      }
      request.env.push_back(e + "=" + value);
    } else {
      request.env.push_back(e);
    }
  }
  request.uid = image.uid;
  request.gid = image.gid;
  request.cwd = !args.workdir.empty()      ? args.workdir
                : !args.workspace.empty()  ? "/workspace"
                : !image.workdir.empty()   ? image.workdir
                                           : "/";

  vm::LaunchOptions options;
  options.rootImage = image.erofs;
  options.cpus = args.cpus;
  options.memoryMiB = args.memory;
  std::unique_ptr<session::Session> session;
  if (!args.review.empty()) {
    auto opened = openSession(host.dirs.state, args.workspace, false, args.quiet, false, {});
    if (!opened) {
      std::fprintf(stderr, "airlock: %s\n", opened.error().message.c_str());
      return opened.error().code == 1 ? exit_code::kInternal : opened.error().code;
    }
    session = std::move(*opened);
    options.workspaceSnapshot = session->dir() + "/snapshot";
    options.egressNetwork.logPath = session->dir() + "/egress.log";
  } else {
    options.workspaceDir = args.workspace;
    if (!args.workspace.empty() && !args.quiet)
      std::fprintf(stderr, "airlock: warning: -w shares %s as it is, secret files (.env, keys) included; add "
                           "--review=MODE to give the command a snapshot without them\n", args.workspace.c_str());
  }
  options.accel = accel;
  options.egress = *policy;
  auto published = parseHostPorts(args.egress.publish, "--publish");
  if (!published) {
    std::fprintf(stderr, "airlock: %s\n", published.error().message.c_str());
    return published.error().code;
  }
  options.publish = *published;
  auto say = [quiet = args.quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "airlock: %s\n", line.c_str());
  };
  options.progress = say;
  options.warn = [](const std::string& line) { std::fprintf(stderr, "airlock: warning: %s\n", line.c_str()); };
  if (!args.quiet)
    options.notice = [](const std::string& line) { std::fprintf(stderr, "airlock: note: %s\n", line.c_str()); };
  if (!args.rootfs.empty()) {
    auto erofs = image::ensureRootfsImage(host.dirs.cache, args.rootfs, say);
    if (!erofs) {
      std::fprintf(stderr, "airlock: %s\n", erofs.error().message.c_str());
      return erofs.error().code;
    }
    options.rootImage = *erofs;
  }
  auto machine = vm::Machine::launch(host, options);
  if (!machine) {
    std::fprintf(stderr, "airlock: %s\n", machine.error().message.c_str());
    return machine.error().code == 1 ? exit_code::kInternal : machine.error().code;
  }
  auto attached = attachCommand((*machine)->vm().control(), request, usePty);
  auto code = attached ? Result<int>(attached->code) : Result<int>(std::unexpected(attached.error()));
  if ((*machine)->network() && !args.quiet)
    reportBlocked(*(*machine)->network(), args.egress.log                     ? "shown above"
                                          : options.egressNetwork.logPath.empty() ? "run again with --egress-log"
                                                                                  : options.egressNetwork.logPath);
  std::string crash = (*machine)->vm().crashReason();
  if (!code) {
    (*machine)->stop();
    std::fprintf(stderr, "airlock: %s%s\n", code.error().message.c_str(),
                 crash.empty() ? "" : (" (" + crash + ")").c_str());
    return code.error().code == 1 ? exit_code::kVmFailed : code.error().code;
  }
  if (!session) {
    (*machine)->stop();
    return *code;
  }
  ReviewOutcome outcome;
  auto reviewed = exportAndReview(host.dirs.state, *session, **machine, ReviewPolicy{args.review, *code, args.acceptFailed, "the command", attached->forced}, {}, outcome);
  if (!reviewed) {
    std::fprintf(stderr, "airlock: %s\n", reviewed.error().message.c_str());
    return reviewed.error().code;
  }
  session->endPhase();
  printResumeHint(host.dirs.state, outcome);
  bool reviewFailed = *reviewed != 0 && *reviewed != exit_code::kReviewPending && *reviewed != exit_code::kConflict;
  return reviewFailed || *code == 0 ? *reviewed : *code;
}

}  // namespace

void addRunImageOptions(CLI::App& cmd, RunImageArgs& args) {
  cmd.add_option("--rootfs", args.rootfs, "Host directory holding the guest's root filesystem (needs /bin/sh)");
  addRegistryFlags(cmd, args.registry);
  cmd.add_option("--cpus", args.cpus, "vCPUs")->capture_default_str()->check(CLI::Range(1, 64));
  cmd.add_option("--memory", args.memory, "Guest memory in MiB")->capture_default_str()->check(
      CLI::Range(128, 65536));
  repeatable(cmd.add_option("-e,--env", args.env,
                  "Environment variable for the command: NAME=VALUE, or NAME to pass the host's value. Values "
                  "travel over the control channel, never on a command line"));
  cmd.add_option("-w,--workspace", args.workspace,
                  "Host directory at /workspace: shared read-only, or with --review a snapshot the command may change")
      ->check(CLI::ExistingDirectory);
  cmd.add_option("--review", args.review,
                  "With -w: the command edits a snapshot of the workspace and its changes go through the review "
                  "gate: interactive, auto (accept all but held-back paths), all, or none (keep them pending)")
      ->check(CLI::IsMember({"interactive", "auto", "all", "none"}));
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
                        const std::vector<std::string>& afterDoubleDash) {
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
  airlock run-image --rootfs ./rootfs -e TOKEN -e MODE=ci -- ./deploy-check)") + "\n\nEnding a session: " + kEscapeHelp + ".");
  addRunImageOptions(*cmd, *args);
  cmd->callback([args, cmd, &exitCode, &host, &afterDoubleDash] {
    if (auto r = finishRunImageArgs(*args, *cmd, afterDoubleDash); !r) {
      std::fprintf(stderr, "airlock: %s\n", r.error().message.c_str());
      exitCode = r.error().code;
      return;
    }
    exitCode = runImage(host, *args);
  });
}

}  // namespace airlock::cli
