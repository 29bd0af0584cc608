// `airlock run AGENT [OPTIONS] [-- AGENT ARGS...]`: the whole job.
//
//   1. agent spec and config (flags > user config > .airlock.yaml, which can
//      only tighten; ignored repo keys are printed), session (state dir, log,
//      workspace lock), interrupted flushes settled
//   2. snapshot: baseline manifest + private copy (secret files never copied)
//   3. image: the agent's erofs image (built on first use)
//   4. boot: microVM, snapshot as the read-only lower layer of /workspace
//   5. attach: the agent on your terminal (or pipes)
//   6. export: the /workspace upper layer as an OCI layer tar; the VM is stopped
//      and QEMU confirmed gone before anything else happens
//   7-9. three-way diff, review, flush (cli/review.h)
//  10. cleanup; exit with the agent's exit code (or 70/71 when changes were left)
//
// Direct mode (--workspace-mode=direct, confirmed with --yes or in the user
// config) skips 2, 6 and 7-9: the live workspace is shared read-write.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agents/agent_env.h"
#include "cli/attach.h"
#include "cli/commands.h"
#include "cli/egress_flags.h"
#include "cli/registry_flags.h"
#include "cli/review.h"
#include "cli/run_flags.h"
#include "cli/session_job.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/visible_text.h"
#include "config/effective.h"
#include "config/egress_plan.h"
#include "config/loader.h"
#include "image/agent_image.h"
#include "image/rootfs_image.h"
#include "session/session.h"
#include "vm/launcher.h"

extern char** environ;

namespace airlock::cli {
namespace {


/// The envelope-changing flags (run_flags.h, shared with `airlock info`) and the rest.
struct RunArgs : PolicyFlags {
  std::string agent;
  std::string workspace = ".";
  std::string accel = "auto";
  std::string tty = "auto";
  bool yes = false;
  bool timings = false;
  bool wait = false;
  bool quiet = false;
  bool acceptFailed = false;
  std::vector<std::string> agentArgs;
  RegistryFlags registry;  ///< how to pull --image
};

int report(const Error& e) {
  std::fprintf(stderr, "airlock: %s\n", e.message.c_str());
  return e.code == 1 ? exit_code::kInternal : e.code;
}

agents::EnvMap hostEnvironment() {
  agents::EnvMap env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

/// The agent's environment: base variables, the spec's env, the variables the
/// spec forwards, then --env NAME / NAME=VALUE.
Result<agents::EnvMap> agentEnvironment(const agents::AgentSpec& spec, const std::vector<std::string>& extra,
                                        bool pty) {
  agents::EnvMap env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                        {"HOME", "/home/agent"},
                        {"USER", "agent"},
                        {"LOGNAME", "agent"},
                        {"LANG", "C.UTF-8"}};
  if (pty) {
    const char* term = std::getenv("TERM");
    env["TERM"] = term && *term ? term : "xterm-256color";
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  auto host = hostEnvironment();
  for (const auto& [k, v] : agents::forwardedEnv(spec, host)) env[k] = v;
  for (const auto& e : extra) {
    auto eq = e.find('=');
    if (eq == 0) return failWith(exit_code::kUsage, "--env {}: the variable name is empty", e);
    if (eq != std::string::npos) {
      env[e.substr(0, eq)] = e.substr(eq + 1);
      continue;
    }
    auto it = host.find(e);
    if (it == host.end())
      return failWith(exit_code::kUsage, "--env {}: not set in your environment; use --env {}=VALUE", e, e);
    env[e] = it->second;
  }
  return env;
}

std::vector<std::string> toEntries(const agents::EnvMap& env) {
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

/// The agent spec with the variables the user config forwards added to its own.
agents::AgentSpec withConfigForwards(agents::AgentSpec spec, const config::Settings& settings) {
  for (const auto& name : settings.envForward)
    if (name.layer == config::Layer::kUser) spec.envForward.push_back(name.value);
  return spec;
}

/// Puts the configured `image` into `launch`: a path ('/' or '.' first) to a
/// rootfs directory (turned into a cached erofs image) or an erofs file, else
/// an OCI image reference pulled per the registry flags.
Result<> useConfiguredImage(const HostContext& host, const std::string& image, const RegistryFlags& registry,
                            const config::Settings& settings, bool quiet, vm::LaunchOptions& launch) {
  if (!image.starts_with('/') && !image.starts_with('.')) {
    auto pulled = pulledImagePath(host, image, registry, settings, quiet);
    if (!pulled) return std::unexpected(pulled.error());
    launch.rootImage = *pulled;
    return {};
  }
  struct stat st {};
  if (stat(image.c_str(), &st) != 0)
    return failWith(exit_code::kImage, "image {}: {}; set `image` to a rootfs directory, an erofs image file or an "
                    "image reference", image, errnoText(errno));
  if (!S_ISDIR(st.st_mode)) {
    launch.rootImage = image;
    return {};
  }
  auto erofs = image::ensureRootfsImage(host.dirs.cache, image, {});
  if (!erofs) return std::unexpected(erofs.error());
  launch.rootImage = *erofs;
  return {};
}

/// Runs a helper command in the guest as `uid`, feeding `input`; fails with
/// its stderr when it exits non-zero.
Result<> runInGuest(vm::ControlChannel& channel, const std::vector<std::string>& argv, const std::string& input,
                    uint32_t uid) {
  protocol::ExecRequest request;
  request.argv = argv;
  request.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/agent"};
  request.uid = request.gid = uid;
  request.cwd = "/";
  std::string err;
  vm::OutputHandlers handlers;
  handlers.onStderr = [&](std::string_view d) {
    if (err.size() < 4096) err.append(d);
  };
  auto cmd = channel.exec(request, handlers);
  if (!cmd) return std::unexpected(cmd.error());
  if (auto w = (*cmd)->writeStdin(input); !w) return w;
  (void)(*cmd)->closeStdin();
  auto status = (*cmd)->wait();
  if (!status) return std::unexpected(status.error());
  if (status->shellCode() != 0)
    return fail("'{}' failed in the guest ({}): {}", argv[0], status->shellCode(),
                err.empty() ? (*cmd)->startError() : visibleText(err));
  return {};
}

int runAgent(const HostContext& host, RunArgs args) {
  if (auto r = checkAllowHosts(args.egress); !r) return report(r.error());
  auto effective = config::loadEffectiveConfig(config::userConfigPath(host.dirs.config), args.agent, args.workspace,
                                               flagLayer(args));
  if (!effective) return report(effective.error());
  for (const auto& ignored : effective->resolved.ignored)
    std::fprintf(stderr, "airlock: %s\n", config::describe(ignored).c_str());
  if (auto r = config::checkDirectMode(effective->resolved, effective->sources, args.yes); !r) return report(r.error());
  const config::Settings& settings = effective->resolved.settings;
  const bool direct = settings.workspaceMode.value == config::WorkspaceMode::kDirect;
  const agents::AgentSpec spec = withConfigForwards(effective->agent, settings);
  std::vector<std::string> excludes;
  for (const auto& e : settings.excludes) excludes.push_back(e.value);
  args.review = settings.review ? std::string(config::reviewPolicyName(settings.review->value)) : "";
  vm::AccelRequest accel;
  if (!vm::parseAccel(args.accel, accel))
    return report({fmt::format("--accel must be auto, kvm or tcg (got '{}')", args.accel), exit_code::kUsage});
  // The review talks to the controlling terminal, whatever stdin/stdout are.
  bool reviewTerminal = haveControllingTerminal();
  if (!direct) {
    if (args.review.empty()) args.review = reviewTerminal ? "interactive" : "";
    if (args.review.empty())
      return report({"no terminal for the interactive review: pass --review=auto (accept all but held-back paths) "
                     "or --review=none (keep every change in the session for later)",
                     exit_code::kUsage});
    if (args.review == "interactive" && !reviewTerminal)
      return report({"--review=interactive needs a terminal; pass --review=auto or --review=none", exit_code::kUsage});
  }
  if (args.acceptFailed && args.review != "auto" && args.review != "all")
    return report({"--accept-failed applies to --review=auto or --review=all only", exit_code::kUsage});
  bool usePty = args.tty == "always" || (args.tty == "auto" && interactiveTerminal());
  auto env = agentEnvironment(spec, args.env, usePty);
  if (!env) return report(env.error());
  auto hostPorts = parseHostPorts(args.egress.hostPorts);
  if (!hostPorts) return report(hostPorts.error());
  auto policy = config::runEgressPolicy(spec, settings, std::move(*hostPorts));
  if (!policy) return report(policy.error());
  policy->log = args.egress.log;
  auto published = parseHostPorts(args.egress.publish, "--publish");
  if (!published) return report(published.error());

  // 1-2. Session and snapshot.
  auto session = openSession(host.dirs.state, args.workspace, args.wait, args.quiet, direct, excludes);
  if (!session) return report(session.error());
  auto& s = **session;

  // 3. Image: --image (a registry reference), else the configured one, else
  // the agent's (pulled when its spec names a reference, else built).
  vm::LaunchOptions launch;
  bool builtAgentImage = false;  // the agent's own image: its home already belongs to the agent
  if (!args.image.empty()) {
    s.phase("image", "image " + args.image);
    auto image = pulledImagePath(host, args.image, args.registry, settings, args.quiet);
    if (!image) return report(image.error());
    launch.rootImage = *image;
  } else if (settings.image) {
    s.phase("image", "image " + settings.image->value);
    if (auto r = useConfiguredImage(host, settings.image->value, args.registry, settings, args.quiet, launch); !r)
      return report(r.error());
  } else if (!spec.image.reference.empty()) {
    s.phase("image", "image " + spec.image.reference);
    auto image = pulledImagePath(host, spec.image.reference, args.registry, settings, args.quiet);
    if (!image) return report(image.error());
    launch.rootImage = *image;
  } else {
    s.phase("image", "image for " + spec.name);
    auto image = image::ensureAgentImage(host.dirs.cache, spec, [&](const std::string& line) {
      if (!args.quiet) std::fprintf(stderr, "airlock: %s\n", line.c_str());
    });
    if (!image) return report(image.error());
    launch.rootImage = *image;
    builtAgentImage = true;
  }

  // 4. Boot. In direct mode the agent runs as the workspace's owner, so what
  // it writes keeps your ownership.
  s.phase("boot", fmt::format("booting {} ({} vCPUs, {} MiB, egress {}{})", spec.name, settings.cpus.value,
                              settings.memoryMib.value, egress::profileName(policy->profile),
                              direct ? ", direct mode: live workspace read-write" : ""));
  uint32_t agentUid = kAgentUid;
  if (direct) {
    struct stat st {};
    if (stat(s.workspace().c_str(), &st) == 0) agentUid = st.st_uid;
    launch.workspaceDir = s.workspace();
    launch.workspaceReadWrite = true;
  } else {
    launch.workspaceSnapshot = s.dir() + "/snapshot";
  }
  launch.cpus = settings.cpus.value;
  launch.memoryMiB = settings.memoryMib.value;
  launch.scratchMiB = static_cast<unsigned>(spec.scratchMib);
  launch.accel = accel;
  launch.egress = *policy;
  launch.egressNetwork.logPath = s.dir() + "/egress.log";
  launch.publish = *published;
  launch.warn = [](const std::string& line) { std::fprintf(stderr, "airlock: warning: %s\n", line.c_str()); };
  if (!args.quiet)
    launch.notice = [](const std::string& line) { std::fprintf(stderr, "airlock: note: %s\n", line.c_str()); };
  auto machine = vm::Machine::launch(host, launch);
  if (!machine) return report(machine.error());
  auto& control = (*machine)->vm().control();
  // An image airlock did not build for the agent (a rootfs DIR, built with
  // --all-root, or an OCI image) has its own owners: the agent's home is made
  // the agent user's, else the agent could not write its settings.
  if (!builtAgentImage) {
    auto r = runInGuest(control, {"sh", "-c", "mkdir -p /home/agent && chown -R \"$1:$1\" /home/agent", "sh",
                                  std::to_string(agentUid)},
                        "", 0);
    if (!r)
      return report({"cannot make /home/agent writable for the agent user (uid " + std::to_string(agentUid) +
                         ") in the image: " + r.error().message + "; the image needs a writable root with sh, "
                         "mkdir and chown",
                     exit_code::kImage});
  }
  for (const auto& [path, content] : agents::expandHomeFiles(spec, *env)) {
    std::string full = "/home/agent/" + path;
    auto r = runInGuest(control, {"sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"", "sh", full}, content,
                        agentUid);
    if (!r) return report({"cannot write " + full + " in the guest: " + r.error().message, exit_code::kVmFailed});
  }

  // 5. The agent.
  s.phase("agent", "running " + spec.name + (usePty ? "" : " (no terminal: pipes)"));
  protocol::ExecRequest request;
  request.argv = spec.command;
  request.argv.insert(request.argv.end(), spec.defaultArgs.begin(), spec.defaultArgs.end());
  request.argv.insert(request.argv.end(), args.agentArgs.begin(), args.agentArgs.end());
  request.env = toEntries(*env);
  request.uid = request.gid = agentUid;
  request.cwd = "/workspace";
  auto attached = attachCommand(control, request, usePty);
  auto agentCode = attached ? Result<int>(attached->code) : Result<int>(std::unexpected(attached.error()));
  if (!agentCode) {
    std::string crash = (*machine)->vm().crashReason();
    (*machine)->stop();
    return report({agentCode.error().message + (crash.empty() ? "" : " (" + crash + ")"), exit_code::kVmFailed});
  }
  s.log(fmt::format("agent exited with {}", *agentCode));
  if (!args.quiet)
    reportBlocked(*(*machine)->network(), args.egress.log ? "shown above" : launch.egressNetwork.logPath);
  if (direct) {
    (*machine)->stop();
    s.endPhase();
    if (args.timings) std::fprintf(stderr, "airlock: timings\n%s", s.timings().c_str());
    return *agentCode;
  }

  // 6-9. Export the changes, stop the VM, review and flush.
  ReviewOutcome outcome;
  auto reviewed = exportAndReview(host.dirs.state, s, **machine, ReviewPolicy{args.review, *agentCode, args.acceptFailed, "the agent", attached->forced}, excludes,
                                  outcome);
  if (!reviewed) return report(reviewed.error());
  int reviewCode = *reviewed;
  s.endPhase();

  // 10. The session keeps its log, manifest, change set and pending changes;
  // the last line says how to resume a review that left some.
  std::fflush(stdout);
  if (args.timings) std::fprintf(stderr, "airlock: timings\n%s", s.timings().c_str());
  printResumeHint(host.dirs.state, outcome);
  if (reviewCode != 0 && reviewCode != exit_code::kReviewPending && reviewCode != exit_code::kConflict)
    return reviewCode;
  if (*agentCode != 0) return *agentCode;
  return reviewCode;
}

}  // namespace

void addRunCommand(CLI::App& app, int& exitCode, const HostContext& host,
                   const std::vector<std::string>& afterDoubleDash) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run a coding agent in a microVM on a snapshot of your project, then review "
                                        "its changes");
  cmd->footer(std::string(R"(Usage: airlock run AGENT [OPTIONS] [-- AGENT ARGS...]   (or: airlock AGENT ...)

The agent edits a private snapshot of the workspace inside the VM; when it exits
the VM is stopped and every change goes through the review gate before it
reaches your files. Secret files (.env, keys, cloud credentials...) never enter
the VM. Arguments after -- go to the agent untouched.

Exit code: the agent's own, unless it succeeded and the review left changes
pending (70) or in conflict (71); airlock's own failures use 64-74.

When the agent exits non-zero, --review=auto and --review=all flush nothing:
its changes stay pending in the session (add --accept-failed to flush them
anyway). Pending changes are resumed with `airlock review -s SESSION-ID`
(the exact command is the run's last line), from any directory.

Examples:
  airlock run claude-code
  airlock claude-code --review=auto -- -p "fix the failing test"
  airlock run codex -w ~/src/app --env OPENAI_API_KEY --timings)") + "\n\nEnding a session: " + kEscapeHelp + ".");
  cmd->add_option("agent", args->agent, "Agent name (see `airlock agents`)")->required();
  cmd->add_option("-w,--workspace", args->workspace, "Project directory (default: the current directory)")
      ->check(CLI::ExistingDirectory);
  addPolicyFlags(*cmd, *args);
  cmd->add_flag("--accept-failed", args->acceptFailed,
                "With --review=auto/all: flush the changes even when the agent exited non-zero");
  cmd->add_flag("--yes", args->yes, "Confirm --workspace-mode=direct");
  cmd->add_option("--accel", args->accel, "auto, kvm or tcg")->capture_default_str();
  cmd->add_option("--tty", args->tty, "auto, always or never")->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->add_flag("--timings", args->timings, "Print how long each phase took");
  cmd->add_flag("--wait", args->wait, "Wait for another session on the same workspace instead of failing");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress lines");
  addRegistryFlags(*cmd, args->registry);
  cmd->callback([args, &exitCode, &host, &afterDoubleDash] {
    args->agentArgs = afterDoubleDash;
    exitCode = runAgent(host, *args);
  });
}

}  // namespace airlock::cli
