// `airlock info [AGENT] [run's flags] [--json]`: the isolation envelope of
// the run that would happen, without booting anything. The flags that change
// the envelope are run's own (run_flags.h), mapped through the same function.

#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include <fmt/ranges.h>

#include "cli/agent_home.h"
#include "cli/commands.h"
#include "cli/expiry.h"
#include "cli/git_info.h"
#include "cli/git_push.h"
#include "cli/git_ssh_agent.h"
#include "cli/host_secrets.h"
#include "cli/kept_out.h"
#include "cli/mcp_plan.h"
#include "cli/report.h"
#include "cli/run_flags.h"
#include "cli/run_login.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/visible_text.h"
#include "config/effective.h"
#include "config/loader.h"
#include "preflight/envelope.h"
#include "state/settings_import.h"
#include "state/state_store.h"

namespace airlock::cli {
namespace {

/// The secret store's contents by backend id ("file", "secret-service"),
/// read from its index without contacting the Secret Service.
Result<std::map<std::string, size_t>> storedSecrets(const HostContext& host) {
  HostSecrets secrets(host, false);
  auto list = secrets.store().list();
  if (!list) return std::unexpected(list.error());
  std::map<std::string, size_t> count;
  for (const auto& s : *list) ++count[s.backend];
  return count;
}

/// One line: how many secrets each store holds, and that none reaches the VM.
std::string secretsText(const std::map<std::string, size_t>& count, const std::string& fileStore) {
  std::string held;
  for (const auto& [backend, n] : count)
    held += fmt::format("{}{} in {}", held.empty() ? "" : ", ", n,
                        backend == "file"             ? "the file store " + fileStore
                        : backend == "secret-service" ? std::string("the Secret Service")
                                                      : backend);
  return fmt::format("  {:<14} {} (airlock secret ls); none enters the VM\n", "secrets",
                     held.empty() ? "none stored" : held);
}

/// The account login a run would use: brokered (the token stays on the
/// host), or none (API keys go in by value); its stated end, if any
/// (`now`: Unix seconds): past it, `airlock run` refuses the login.
std::string loginText(const std::optional<secrets::SecretInfo>& login, const agents::LoginSpec& spec,
                      const std::string& agent, int64_t now) {
  if (!login && spec.format.empty())
    return fmt::format("  {:<14} none airlock can keep for {}; forwarded API keys enter the VM\n", "login", agent);
  if (!login) return fmt::format("  {:<14} none (airlock login {}); forwarded API keys enter the VM\n", "login", agent);
  if (login->expiresAt && *login->expiresAt <= now)
    return fmt::format(
        "  {:<14} {} (from {}) EXPIRED {}: `airlock run` refuses it; store a new token: airlock login {} "
        "--with-token\n",
        "login", login->name, login->source, relativeTime(login->expiresAt, now), agent);
  std::string text =
      spec.entersVm
          ? fmt::format("  {:<14} {} (from {}), enters the VM: {} cannot be brokered; its login goes in {}\n", "login",
                        login->name, login->source, agent, deliveryText(spec))
          : fmt::format("  {:<14} {} (from {}), brokered: the token stays on this host, the VM gets a placeholder\n",
                        "login", login->name, login->source);
  if (login->expiresAt) text += fmt::format("  {:<14} expires {}\n", "", relativeTime(login->expiresAt, now));
  return text;
}

nlohmann::json loginJson(const std::optional<secrets::SecretInfo>& login, const agents::LoginSpec& spec, int64_t now) {
  if (!login)
    return {{"stored", false}, {"supported", !spec.format.empty()}, {"brokered", false}, {"enters_vm", false}};
  nlohmann::json j = {{"stored", true},
                      {"supported", true},
                      {"secret", login->name},
                      {"source", login->source},
                      {"brokered", !spec.entersVm},
                      {"enters_vm", spec.entersVm},
                      {"expires_at", nullptr},
                      {"expired", false}};
  if (login->expiresAt) {
    j["expires_at"] = formatUtcTime(*login->expiresAt);
    j["expired"] = *login->expiresAt <= now;
  }
  return j;
}

/// The agent's saved state for this project, as `airlock run` restores it.
struct StateInfo {
  std::vector<std::string> paths;  ///< the spec's state paths (empty: the agent keeps none)
  std::optional<state::SavedState> saved;
};

/// `project`: the workspace's real path (config::EffectiveConfig::workspace).
StateInfo stateInfo(const HostContext& host, const agents::AgentSpec& spec, const std::string& project) {
  if (spec.state.empty()) return {};
  return {spec.state, state::findState(host.dirs.data, spec.name, project)};
}

/// The "agent state" line; `fresh`: as `airlock run --fresh` (not restored).
std::string stateText(const StateInfo& st, bool fresh) {
  if (st.paths.empty()) return fmt::format("  {:<14} none kept between runs\n", "agent state");
  std::string paths = fmt::format("{}", fmt::join(st.paths, ", "));
  if (!st.saved) return fmt::format("  {:<14} {} (none saved for this project yet)\n", "agent state", paths);
  if (fresh)
    return fmt::format("  {:<14} {}: {} saved for this project, not restored (--fresh) and kept as it is\n",
                       "agent state", paths, formatBytes(st.saved->bytes));
  return fmt::format("  {:<14} {}: {} saved for this project, restored at boot (run --fresh: not)\n", "agent state",
                     paths, formatBytes(st.saved->bytes));
}

/// The user's settings `airlock run` copies in, as it computes them;
/// nullopt when settings_import is off. `flagEnv`: the -e/--env arguments.
Result<std::optional<state::ImportedSettings>> settingsInfo(const HostContext& host,
                                                            const config::EffectiveConfig& effective,
                                                            const std::vector<std::string>& flagEnv) {
  const config::Settings& settings = effective.resolved.settings;
  if (!settings.settingsImport.value) return std::nullopt;
  const agents::AgentSpec spec = withConfigForwards(effective.agent, settings);
  auto env = agentEnvironment(host, spec, flagEnv, false);
  if (!env) return std::unexpected(env.error());
  std::vector<session::HomeFile> homeFiles, seedFiles;
  for (const auto& [path, content] : agents::expandFiles(spec.homeFiles, *env)) homeFiles.push_back({path, content});
  for (const auto& [path, content] : agents::expandFiles(spec.seedFiles, *env)) seedFiles.push_back({path, content});
  return importUserSettings(host, spec, settings, *env, homeFiles, seedFiles).imported;
}

/// The "your settings" lines: what goes in, what is left out, or that none does.
std::string settingsText(const std::optional<state::ImportedSettings>& imported, const config::Settings& settings) {
  if (!imported)
    return fmt::format("  {:<14} not copied in (settings_import: false, {})\n", "your settings",
                       config::layerName(settings.settingsImport.layer));
  std::string out = fmt::format("  {:<14} {}\n", "your settings",
                                imported->imported.empty() ? std::string("none found")
                                                           : fmt::format("{} (copied in, never written back)",
                                                                         fmt::join(imported->imported, ", ")));
  for (const auto& line : imported->dropped) out += fmt::format("  {:<14} left out: {}\n", "", line);
  return out;
}

std::vector<std::string> envNames(const std::map<std::string, std::string>& env) {
  std::vector<std::string> names;
  for (const auto& [name, value] : env) names.push_back(name);
  return names;
}

/// The MCP servers the run gives the agent (none: the line says why);
/// `problem`: why the run would refuse them ("" when it would not).
std::string mcpText(const config::Settings& settings, const agents::AgentSpec& agent, const std::string& problem) {
  if (settings.mcpServers.empty())
    return fmt::format("  {:<14} none (mcp_servers in your config; --mcp NAME / --no-mcp choose per run)\n",
                       "mcp servers");
  if (agent.mcp.file.empty())
    return fmt::format("  {:<14} none: {} takes no MCP servers from airlock\n", "mcp servers", agent.name);
  if (!problem.empty()) return fmt::format("  {:<14} refused: {}\n", "mcp servers", problem);
  std::string out;
  for (const auto& s : settings.mcpServers) {
    const auto argv = agents::mcpServerArgv(s.value);
    const std::string from = s.value.npmPackage.empty()
                                 ? "from the image"
                                 : fmt::format("npm {}@{}", s.value.npmPackage, s.value.npmVersion);
    const auto env = envNames(s.value.env);
    const std::string envText = env.empty() ? "" : fmt::format(" (env {})", fmt::join(env, ", "));
    if (s.value.viaProxy()) {
      const std::string what = s.value.host
                                   ? fmt::format("on this host, through airlock's proxy: {}{}",
                                                 fmt::format("{}", fmt::join(argv, " ")), envText)
                                   : fmt::format("remote, through airlock's proxy: {}{}", s.value.url,
                                                 s.value.token.empty() ? "" : " (token " + s.value.token + ")");
      out += fmt::format("  {:<14} {}: {}; tools: {}   [{}]\n", out.empty() ? "mcp servers" : "", s.value.name,
                         visibleText(what), visibleText(fmt::format("{}", fmt::join(s.value.tools, ", "))),
                         config::layerName(s.layer));
      continue;
    }
    out += fmt::format("  {:<14} {}: {}, in the VM: {}{}   [{}]\n", out.empty() ? "mcp servers" : "", s.value.name,
                       from, visibleText(fmt::format("{}", fmt::join(argv, " "))), envText, config::layerName(s.layer));
  }
  return out;
}

nlohmann::json mcpJson(const config::Settings& settings, const agents::AgentSpec& agent, const std::string& problem) {
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& s : settings.mcpServers)
    servers.push_back(
        {{"name", s.value.name},
         {"where", s.value.host           ? "host"
                   : !s.value.url.empty() ? "remote"
                                          : "vm"},
         {"url", s.value.url.empty() ? nlohmann::json() : nlohmann::json(s.value.url)},
         {"token", s.value.token.empty() ? nlohmann::json() : nlohmann::json(s.value.token)},
         {"npm", s.value.npmPackage.empty() ? nlohmann::json()
                                            : nlohmann::json(s.value.npmPackage + "@" + s.value.npmVersion)},
         {"argv", agents::mcpServerArgv(s.value)},
         {"env_names", envNames(s.value.env)},
         {"tools", s.value.viaProxy() ? nlohmann::json(s.value.tools) : nlohmann::json("all")},
         {"from", config::layerName(s.layer)}});
  return {{"given", !settings.mcpServers.empty() && !agent.mcp.file.empty() && problem.empty()},
          {"problem", problem.empty() ? nlohmann::json() : nlohmann::json(problem)},
          {"servers", servers}};
}

struct InfoArgs : PolicyFlags {
  std::string agent = "claude-code";
  std::string workspace = ".";
  bool json = false;
  bool excluded = false;
  bool yes = false;
  bool fresh = false;
  std::string accel = "auto";
};

int runInfo(const HostContext& host, const InfoArgs& args) {
  if (auto r = checkAllowHosts(args.egress); !r) return reportError(r.error());
  auto effective = config::loadEffectiveConfig(config::userConfigPath(host.dirs.config), args.agent, args.workspace,
                                               flagLayer(args));
  if (!effective) return reportError(effective.error());
  auto login = loginForRun(host, effective->agent, args.env);
  if (!login) return reportError(login.error());
  const agents::LoginSpec loginSpec = effective->agent.login;
  if (*login) {
    effective->agent = withLogin(std::move(effective->agent), args.env);
    std::erase_if(effective->resolved.settings.envForward,
                  [&](const auto& v) { return billedVariable(loginSpec, v.value, args.env); });
  }
  preflight::RunPorts ports;
  auto hostPorts = parseHostPorts(args.egress.hostPorts);
  if (!hostPorts) return reportError(hostPorts.error());
  ports.hostPorts = std::move(*hostPorts);
  auto published = parseHostPorts(args.egress.publish, "--publish");
  if (!published) return reportError(published.error());
  ports.published = std::move(*published);
  vm::AccelRequest accel;
  if (!vm::parseAccel(args.accel, accel))
    return reportError(Error{"--accel must be auto, kvm or tcg (got '" + args.accel + "')", exit_code::kUsage});
  auto facts = vm::probeHost();
  if (auto r = vm::checkAccelRequest(accel, facts); !r) return reportError(r.error());  // as run refuses it
  bool direct = effective->resolved.settings.workspaceMode.value == config::WorkspaceMode::kDirect;
  std::optional<workspace::SnapshotResult> kept;
  if (!direct) {
    auto k = keptOut(effective->workspace, effective->resolved.settings, args.excluded);
    if (!k) return reportError(k.error());
    kept = std::move(*k);
  }
  const StateInfo agentState = stateInfo(host, effective->agent, effective->workspace);
  GitEnvelope git = gitEnvelope(effective->workspace, args.git, direct);
  auto pushHosts = gitPushHosts(effective->resolved.settings);
  if (!pushHosts) return reportError(pushHosts.error());
  git.pushHosts = *pushHosts;
  if (const auto& token = effective->resolved.settings.gitToken; token && !token->value.empty())
    git.pushToken = token->value;
  auto sshKeys = gitSshKeys(effective->resolved.settings);
  if (!sshKeys) return reportError(sshKeys.error());
  git.sshKeys = *sshKeys;
  git.sshHosts = config::gitSshHosts(effective->resolved.settings);
  git.sshConfirm = effective->resolved.settings.gitSshConfirm.value;
  auto importedSettings = settingsInfo(host, *effective, args.env);
  if (!importedSettings) return reportError(importedSettings.error());
  const auto& userSettings = *importedSettings;
  const config::Settings resolved = effective->resolved.settings;
  const agents::AgentSpec agent = effective->agent;
  std::string mcpProblem, unusedLine;
  {
    std::vector<session::HomeFile> unused;
    auto mcp = planMcpServers(resolved, imageSource(args.image, resolved, agent, unusedLine), agent, unused);
    if (!mcp) mcpProblem = mcp.error().message;
  }
  auto backend = preflight::describeBackend(host.dirs.cache, facts, accel);
  auto image = preflight::describeImage(host.dirs.cache, *effective, args.image);
  auto envelope =
      preflight::buildEnvelope(std::move(*effective), std::move(backend), std::move(image), std::move(ports), args.yes);
  if (!envelope) return reportError(envelope.error());
  auto secrets = storedSecrets(host);
  if (!secrets) return reportError(secrets.error());
  const std::string fileStore = host.dirs.data + "/secrets";
  if (args.json) {
    auto j = preflight::envelopeJson(*envelope);
    j["kept_out"] = kept ? keptOutJson(*kept, args.excluded) : nlohmann::json(nullptr);
    j["git"] = gitEnvelopeJson(git);
    j["secrets"] = {{"stored", *secrets}, {"file_store", fileStore}, {"in_vm", nlohmann::json::array()}};
    j["login"] = loginJson(*login, loginSpec, nowSeconds(host));
    j["mcp_servers"] = mcpJson(resolved, agent, mcpProblem);
    j["agent_state"] = {{"paths", agentState.paths},
                        {"saved_bytes", agentState.saved ? nlohmann::json(agentState.saved->bytes) : nlohmann::json()},
                        {"restored", agentState.saved.has_value() && !args.fresh},
                        {"dir", agentState.saved ? nlohmann::json(agentState.saved->dir) : nlohmann::json()}};
    j["settings_import"] =
        userSettings ? nlohmann::json{{"enabled", true},
                                      {"imported", userSettings->imported},
                                      {"left_out", userSettings->dropped}}
                     : nlohmann::json{{"enabled", false}, {"from", config::layerName(resolved.settingsImport.layer)}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fputs(preflight::envelopeText(*envelope).c_str(), stdout);
    if (kept) std::fputs(keptOutText(*kept, args.excluded).c_str(), stdout);
    std::fputs(gitEnvelopeText(git).c_str(), stdout);
    std::fputs(stateText(agentState, args.fresh).c_str(), stdout);
    std::fputs(settingsText(userSettings, resolved).c_str(), stdout);
    std::fputs(mcpText(resolved, agent, mcpProblem).c_str(), stdout);
    std::fputs(loginText(*login, loginSpec, args.agent, nowSeconds(host)).c_str(), stdout);
    std::fputs(secretsText(*secrets, fileStore).c_str(), stdout);
  }
  return 0;
}

}  // namespace

void addInfoCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto args = std::make_shared<InfoArgs>();
  auto* cmd = app.add_subcommand("info", "Show the isolation envelope of `airlock run AGENT` without booting");
  cmd->footer(R"(Takes `airlock run`'s flags that change the envelope (--cpus, --memory,
--image, --exclude, --review, --git, --workspace-mode, --yes, --accel, --egress-profile,
--allow-host, --host-port, --publish, -e/--env) and shows the envelope of
exactly that run. For every value: which layer set it (built-in, user, repo,
flag). Repo keys that .airlock.yaml may not set (it can only tighten) are
listed as ignored, with the reason. Environment variables are shown by name,
never by value.

"kept out" counts what the snapshot would leave out of the guest, and why:
secret names, airlock's config files, ignored paths and hard links to any of
them come from a walk of the workspace (only git config files are read, for
the credential store files they name). --excluded also
reads every file, as the snapshot does, for private keys and for credentials
in git config files, and lists the paths.

"login" is the account login `airlock login AGENT` stored: brokered, it
stays on this host (the VM gets a placeholder, the model API needs no
egress allowance and the agent's API-key variables are not forwarded).

"secrets" counts what `airlock secret` holds in each store (the Secret
Service, the file store), from its index: the Secret Service is not
contacted and no value is read. None of them enters the VM.

Examples:
  airlock info claude-code
  airlock info codex -w ~/src/app --json
  airlock info claude-code --excluded
  airlock info claude-code --egress-profile locked --allow-host git.example.com:8443 --cpus 4)");
  cmd->add_option("agent", args->agent, "Agent name (default: claude-code)");
  cmd->add_option("-w,--workspace", args->workspace, "Project directory (default: the current directory)")
      ->check(CLI::ExistingDirectory);
  addPolicyFlags(*cmd, *args);
  cmd->add_flag("--yes", args->yes, "As `airlock run --yes` (acknowledges direct mode)");
  cmd->add_flag("--fresh", args->fresh, "As `airlock run --fresh` (the saved agent state is not restored)");
  cmd->add_option("--accel", args->accel, "As `airlock run --accel`: auto, kvm or tcg")->capture_default_str();
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->add_flag("--excluded", args->excluded,
                "List the paths the snapshot keeps out and why (reads every file, as the snapshot does)");
  cmd->callback([args, &exitCode, &host] { exitCode = runInfo(host, *args); });
}

}  // namespace airlock::cli
