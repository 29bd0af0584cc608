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
//   7-9. three-way diff, review, flush
//  10. cleanup; exit with the agent's exit code (or 70/71 when changes were left)
//
// This file turns flags, config and the agent spec into a session::Plan;
// session::Runner carries it out (src/session/runner.h).
//
// Direct mode (--workspace-mode=direct, confirmed with --yes or in the user
// config) skips 2, 6 and 7-9: the live workspace is shared read-write.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "agents/agent_env.h"
#include "cli/agent_home.h"
#include "cli/attach.h"
#include "cli/commands.h"
#include "cli/detach.h"
#include "cli/egress_flags.h"
#include "cli/extra_ca.h"
#include "cli/git_push.h"
#include "cli/git_ssh_agent.h"
#include "cli/image_provider.h"
#include "cli/mcp_host.h"
#include "cli/mcp_plan.h"
#include "cli/registry_flags.h"
#include "cli/report.h"
#include "cli/review_output.h"
#include "cli/run_flags.h"
#include "cli/run_login.h"
#include "cli/session_flags.h"
#include "cli/terminal_ui.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "config/effective.h"
#include "config/egress_plan.h"
#include "config/loader.h"
#include "session/runner.h"
#include "session/session.h"
#include "session/supervisor.h"
#include "state/state_store.h"
#include "vm/guest_contract.h"
#include "workspace/git_identity.h"

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
  bool fresh = false;  ///< --fresh: the saved agent state neither restored nor replaced
  bool quiet = false;
  bool acceptFailed = false;
  std::vector<std::string> agentArgs;
  RegistryFlags registry;  ///< how to pull --image
  DetachFlags detached;    ///< -d, --name
};

/// `airlock run`'s plan: config merged, the envelope's checks passed.
struct RunSetup {
  session::Plan plan;
  config::Settings settings;
  agents::AgentSpec spec;
  state::ImportedSettings imported;  ///< what of the user's settings goes in, and what was left out
  std::unique_ptr<RunLogin> login;   ///< the account login and its broker (none: API keys by value)
  std::string gitSsh;                ///< what --git-ssh-agent forwards, for the user ("" without)
  McpPlan mcp;                       ///< the MCP servers given to the agent
  std::shared_ptr<mcp::HostMcpProxy> hostMcp;  ///< the servers of mcp.hostServers, running (none: null)
};

Result<RunSetup> planRun(const HostContext& host, const RunArgs& args) {
  if (auto r = checkAllowHosts(args.egress); !r) return std::unexpected(r.error());
  auto effective = config::loadEffectiveConfig(config::userConfigPath(host.dirs.config), args.agent, args.workspace,
                                               flagLayer(args));
  if (!effective) return std::unexpected(effective.error());
  for (const auto& ignored : effective->resolved.ignored)
    std::fprintf(stderr, "airlock: %s\n", config::describe(ignored).c_str());
  if (auto r = config::checkDirectMode(effective->resolved, effective->sources, args.yes); !r)
    return std::unexpected(r.error());
  RunSetup setup;
  setup.settings = effective->resolved.settings;
  const config::Settings& settings = setup.settings;
  const bool direct = settings.workspaceMode.value == config::WorkspaceMode::kDirect;
  setup.spec = withConfigForwards(effective->agent, settings);
  auto login = RunLogin::open(host, setup.spec, args.env);
  if (!login) return std::unexpected(login.error());
  setup.login = std::move(*login);
  if (setup.login) setup.spec = withLogin(std::move(setup.spec), args.env);
  const agents::AgentSpec& spec = setup.spec;
  session::Plan& plan = setup.plan;
  plan.workspace = args.workspace;
  plan.workspaceMode = direct ? session::WorkspaceMode::kDirect : session::WorkspaceMode::kSnapshot;
  for (const auto& e : settings.excludes) plan.excludes.push_back(e.value);
  std::string review = settings.review ? std::string(config::reviewPolicyName(settings.review->value)) : "";
  plan.name = args.detached.name;
  plan.label = spec.name;
  plan.detached = args.detached.supervise;
  if (plan.detached) {
    // Reviewed later, with `airlock review NAME`.
  } else if (!direct) {
    auto policy = chooseReview(host, review, args.acceptFailed);
    if (!policy) return std::unexpected(policy.error());
    plan.review = *policy;
    if (!args.git.empty()) plan.review.gitImport = *workspace::parseGitImportMode(args.git);
  } else if (!args.git.empty()) {
    return failWith(exit_code::kUsage, "--git applies to a review: direct mode has none (drop --git)");
  } else if (args.acceptFailed && review != "auto" && review != "all") {
    return failWith(exit_code::kUsage, "--accept-failed applies to --review=auto or --review=all only");
  }
  plan.review.who = "the agent";
  // A detached agent gets a terminal, for `airlock attach`.
  plan.pty = plan.detached ? args.tty != "never" : usePty(host, args.tty);
  auto env = agentEnvironment(host, spec, args.env, plan.pty);
  if (!env) return std::unexpected(env.error());
  if (auto r = applyExtraCaCertificates(settings, plan, *env); !r) return std::unexpected(r.error());
  if (setup.login) setup.login->applyToEnvironment(*env, args.env);
  auto hostPorts = parseHostPorts(args.egress.hostPorts);
  if (!hostPorts) return std::unexpected(hostPorts.error());
  auto policy = config::runEgressPolicy(spec, settings, std::move(*hostPorts));
  if (!policy) return std::unexpected(policy.error());
  policy->log = args.egress.log;
  if (setup.login) {
    policy->brokeredHosts = brokeredHosts(effective->agent);
    policy->accountHosts = spec.login.accountHosts;
  }
  auto published = parseHostPorts(args.egress.publish, "--publish");
  if (!published) return std::unexpected(published.error());
  if (!vm::parseAccel(args.accel, plan.machine.accel))
    return failWith(exit_code::kUsage, "--accel must be auto, kvm or tcg (got '{}')", args.accel);

  plan.image = imageSource(args.image, settings, spec, plan.imageLine);
  // The agent's own image gives its home to the agent user only when root
  // built it: a user's build has every file root's (mkfs.erofs --all-root),
  // so as a user the home is given to the agent user at boot.
  // In direct mode the agent runs as the workspace's owner, so what it
  // writes keeps your ownership; its home then becomes that uid's too.
  uint32_t agentUid = guest::kAgentUid;
  if (direct) {
    struct stat st {};
    if (::stat(args.workspace.c_str(), &st) == 0) agentUid = st.st_uid;
  }
  plan.chownHome =
      plan.image.kind != session::ImageSource::Kind::kAgentBuild || agentUid != guest::kAgentUid || ::geteuid() != 0;
  if (!spec.state.empty() && !args.fresh) {
    const std::string project = resolvedPath(args.workspace);
    state::StateLimits limits;
    limits.maxBytes = uint64_t(spec.stateMaxMib) << 20;
    plan.state = session::StatePlan{state::stateDirFor(host.dirs.data, spec.name, project), project, spec.state, limits,
                                    spec.stateExclude};
  }
  plan.machine.cpus = settings.cpus.value;
  plan.machine.memoryMiB = settings.memoryMib.value;
  plan.machine.scratchMiB = static_cast<unsigned>(spec.scratchMib);
  plan.machine.egress = *policy;
  plan.machine.publish = *published;
  plan.egressLogShown = args.egress.log;
  plan.bootLine = fmt::format("booting {} ({} vCPUs, {} MiB, egress {}{})", spec.name, settings.cpus.value,
                              settings.memoryMib.value, egress::profileName(policy->profile),
                              direct ? ", direct mode: live workspace read-write" : "");
  plan.commandLine = "running " + spec.name + (plan.pty ? "" : " (no terminal: pipes)");

  for (const auto& [path, content] : agents::expandFiles(spec.homeFiles, *env))
    plan.homeFiles.push_back({path, content});
  // Who the agent commits as: the user's git identity, nothing else of the
  // user's global git config (the spec's own .gitconfig wins).
  if (std::none_of(plan.homeFiles.begin(), plan.homeFiles.end(),
                   [](const session::HomeFile& f) { return f.path == ".gitconfig"; })) {
    const std::string xdgConfig = host.dirs.config.substr(0, host.dirs.config.rfind('/'));  // dirs.config: .../airlock
    auto identity = workspace::hostGitIdentity(host.dirs.home, xdgConfig);
    plan.homeFiles.push_back({".gitconfig", workspace::guestGitConfig(identity)});
  }
  if (auto r = applyGitPush(host, settings, host.getEnv("SSL_CERT_FILE"), plan); !r)
    return std::unexpected(r.error());
  for (const auto& [path, content] : agents::expandFiles(spec.seedFiles, *env))
    plan.seedFiles.push_back({path, content});
  auto user = importUserSettings(host, spec, setup.settings, *env, plan.homeFiles, plan.seedFiles);
  setup.imported = std::move(user.imported);
  plan.settings = std::move(user.plan);
  auto mcp = planMcpServers(settings, plan.image, spec, plan.homeFiles);
  if (!mcp) return std::unexpected(mcp.error());
  setup.mcp = std::move(*mcp);
  auto hostMcp = startHostMcpServers(host, setup.mcp.hostServers, plan.workspace, plan);
  if (!hostMcp) return std::unexpected(hostMcp.error());
  setup.hostMcp = std::move(*hostMcp);
  plan.exec.argv = spec.command;
  plan.exec.argv.insert(plan.exec.argv.end(), spec.defaultArgs.begin(), spec.defaultArgs.end());
  plan.exec.argv.insert(plan.exec.argv.end(), setup.mcp.args.begin(), setup.mcp.args.end());
  plan.exec.argv.insert(plan.exec.argv.end(), args.agentArgs.begin(), args.agentArgs.end());
  for (const auto& [k, v] : *env) plan.exec.env.push_back(k + "=" + v);
  plan.exec.uid = plan.exec.gid = agentUid;
  plan.exec.cwd = guest::kWorkspace;
  if (auto r = applyGitSshAgent(host, settings, plan, knownHostsFiles(host.dirs.home)); !r)
    return std::unexpected(r.error());
  if (auto keys = gitSshKeys(settings); keys && !keys->empty()) {
    setup.gitSsh = fmt::format(
        "git over SSH: your SSH agent signs logins with {}{} (no key enters the VM; "
        "port 22 of {})",
        fmt::join(*keys, ", "), settings.gitSshConfirm.value ? ", each one confirmed" : "",
        fmt::join(config::gitSshHosts(settings), ", "));
  }
  if (setup.login)
    if (auto r = setup.login->applyToPlan(plan); !r) return std::unexpected(r.error());
  return setup;
}

/// What crosses into the VM from the host besides the workspace: the login
/// (brokered, or entering the VM) and the user's settings.
void announce(const RunSetup& setup, session::Ui& ui, const std::string& agent) {
  if (setup.login && setup.login->entersVm())
    ui.progress(fmt::format("your {} login enters the VM ({} cannot be brokered): {}", setup.login->describe(), agent,
                            setup.login->delivery()));
  else if (setup.login)
    ui.progress(fmt::format("your {} login stays on this host; the VM gets a placeholder", setup.login->describe()));
  if (setup.login)
    if (std::string warning = setup.login->expiryWarning(); !warning.empty()) ui.notice(warning);
  if (!setup.gitSsh.empty()) ui.progress(setup.gitSsh);
  if (!setup.mcp.line.empty()) ui.progress(setup.mcp.line);
  if (!setup.mcp.notice.empty()) ui.notice(setup.mcp.notice);
  if (!setup.imported.imported.empty())
    ui.progress("your settings, read-only: " + fmt::format("{}", fmt::join(setup.imported.imported, ", ")));
  for (const auto& line : setup.imported.dropped) ui.notice("left out of your settings: " + line);
}

/// The checks of -d and --name that need no plan.
Result<> checkDetachFlags(const RunArgs& args) {
  if (!args.detached.detach && !args.detached.supervise) return {};
  if (!args.review.empty() || args.acceptFailed || !args.git.empty())
    return failWith(exit_code::kUsage,
                    "a detached session is reviewed later: drop --review/--accept-failed/--git "
                    "and run `airlock review NAME` when it has ended");
  if (args.timings) return failWith(exit_code::kUsage, "--timings needs a session in the foreground (drop -d)");
  return {};
}

int runAgent(const HostContext& host, RunArgs args, const std::vector<std::string>& invocation) {
  if (auto r = checkDetachFlags(args); !r) return reportError(r.error());
  if (args.detached.detach && !args.detached.supervise) return startDetached(invocation);
  // The supervisor's signals are set up before planning starts any thread.
  std::optional<session::DetachedUi> detached;
  if (args.detached.supervise) detached.emplace(args.quiet);
  auto setup = planRun(host, args);
  if (!setup) return reportError(setup.error());
  if (detached) {
    announce(*setup, *detached, args.agent);
    CliImageProvider images(host, args.registry, setup->settings, setup->spec, *detached, args.quiet);
    session::Runner runner(setup->plan, {host, *detached, launchMachine(host), images});
    const int code =
        superviseSession(runner, *detached, setup->plan.workspaceMode == session::WorkspaceMode::kSnapshot);
    if (setup->hostMcp) setup->hostMcp->shutdown();
    return code;
  }
  TerminalUi ui(host, args.quiet);
  announce(*setup, ui, args.agent);
  CliImageProvider images(host, args.registry, setup->settings, setup->spec, ui, args.quiet);
  session::Runner runner(setup->plan, {host, ui, launchMachine(host), images});
  auto outcome = runner.run();
  if (setup->hostMcp) setup->hostMcp->shutdown();  // the host servers end with the session
  std::fflush(stdout);
  if (args.timings) std::fprintf(stderr, "airlock: timings\n%s", runner.timings().c_str());
  if (!outcome) return reportError(outcome.error());
  // The session keeps its log, manifest, change set and pending changes;
  // the last line says how to resume a review that left some.
  if (outcome->review) printResumeHint(*outcome->review, host.dirs.state, outcome->sessionDir);
  return outcome->exitCode;
}

}  // namespace

void addRunCommand(CLI::App& app, int& exitCode, const HostContext& host,
                   const std::vector<std::string>& afterDoubleDash, const std::vector<std::string>& invocation) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run",
                                 "Run a coding agent in a microVM on a snapshot of your project, then review "
                                 "its changes");
  cmd->footer(std::string(R"(Usage: airlock run AGENT [OPTIONS] [-- AGENT ARGS...]   (or: airlock AGENT ...)

The agent edits a private snapshot of the workspace inside the VM; when it exits
the VM is stopped and every change goes through the review gate before it
reaches your files. Secret files (.env, keys, cloud credentials...) never enter
the VM. Arguments after -- go to the agent untouched.

Exit code: the agent's own, unless it succeeded and the review left changes
pending (70) or in conflict (71); airlock's own failures use 64-74 and print
an `airlock:` line first (see the table below).

When the agent exits non-zero, --review=auto and --review=all flush nothing:
its changes stay pending in the session (add --accept-failed to flush them
anyway). Pending changes are resumed with `airlock review -s SESSION-ID`
(the exact command is the run's last line), from any directory.

Detached (-d): the agent runs in the background and this command prints the
session's name; `airlock ls` lists sessions, `airlock attach NAME` gives you
its terminal (Ctrl-P Ctrl-Q detaches), `airlock logs NAME` shows its output,
`airlock stop NAME` ends it, and `airlock review NAME` reviews its changes.
Several sessions may run on one workspace; their flushes take turns.

Examples:
  airlock run claude-code
  airlock run -d --name fix-tests claude-code -- -p "fix the failing tests"
  airlock claude-code --review=auto -- -p "fix the failing test"
  airlock run codex -w ~/src/app --env OPENAI_API_KEY --timings)") +
              "\n\nEnding a session: " + kEscapeHelp + ".");
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
  cmd->add_flag("--fresh", args->fresh,
                "Start the agent without its saved state for this project, and keep that state as it is");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress lines");
  addRegistryFlags(*cmd, args->registry);
  addDetachFlags(*cmd, args->detached);
  cmd->callback([args, &host, &exitCode, &afterDoubleDash, &invocation] {
    args->agentArgs = afterDoubleDash;
    exitCode = runAgent(host, *args, invocation);
  });
}

}  // namespace airlock::cli
