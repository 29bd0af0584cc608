#include "config/merge.h"

#include <algorithm>

#include "common/exit_codes.h"
#include "common/visible_text.h"

namespace airlock::config {
namespace {

template <typename T>
void append(std::vector<Sourced<T>>& out, const std::vector<T>& values, Layer layer) {
  for (const auto& v : values) {
    bool known = std::any_of(out.begin(), out.end(), [&](const Sourced<T>& s) { return s.value == v; });
    if (!known) out.push_back({v, layer});
  }
}

/// Takes the servers named in `names` out of `s`.
void removeMcpServers(Settings& s, const std::vector<std::string>& names) {
  for (const auto& name : names)
    std::erase_if(s.mcpServers, [&](const auto& known) { return known.value.name == name; });
}

/// Applies a user or flag layer: every value it sets wins.
void applyOver(Settings& s, const ConfigLayer& l, Layer layer) {
  if (l.cpus) s.cpus = {*l.cpus, layer};
  if (l.memoryMib) s.memoryMib = {*l.memoryMib, layer};
  if (l.egressProfile) s.egressProfile = {*l.egressProfile, layer};
  if (l.workspaceMode) s.workspaceMode = {*l.workspaceMode, layer};
  if (l.review) s.review = Sourced<ReviewPolicy>{*l.review, layer};
  if (l.image) s.image = Sourced<std::string>{*l.image, layer};
  if (l.directModeAcknowledged) s.directModeAcknowledged = {*l.directModeAcknowledged, layer};
  if (l.settingsImport) s.settingsImport = {*l.settingsImport, layer};
  if (l.imageVerify) s.imageVerify = {*l.imageVerify, layer};
  if (l.imageVerifyKey) s.imageVerifyKey = Sourced<std::string>{*l.imageVerifyKey, layer};
  if (l.imageVerifyTrustedRoot) s.imageVerifyTrustedRoot = Sourced<std::string>{*l.imageVerifyTrustedRoot, layer};
  if (l.imageVerifyIssuer) s.imageVerifyIssuer = Sourced<std::string>{*l.imageVerifyIssuer, layer};
  if (l.imageVerifySubject) s.imageVerifySubject = Sourced<std::string>{*l.imageVerifySubject, layer};
  if (l.extraCaCerts) s.extraCaCerts = Sourced<std::string>{*l.extraCaCerts, layer};
  if (l.gitToken) s.gitToken = Sourced<std::string>{*l.gitToken, layer};
  append(s.gitHosts, l.gitHosts, layer);
  if (l.gitSshAgent) s.gitSshAgent = {*l.gitSshAgent, layer};
  append(s.gitSshKeys, l.gitSshKeys, layer);
  if (l.gitSshConfirm) s.gitSshConfirm = {*l.gitSshConfirm, layer};
  append(s.allowHosts, l.allowHosts, layer);
  append(s.removeHosts, l.removeHosts, layer);
  append(s.hostPorts, l.hostPorts, layer);
  append(s.envForward, l.envForward, layer);
  append(s.excludes, l.excludes, layer);
  for (const auto& agent : l.agents) s.customAgents.push_back(agent);
  for (const auto& server : l.mcpServers) {
    std::erase_if(s.mcpServers, [&](const auto& known) { return known.value.name == server.name; });
    s.mcpServers.push_back({server, layer});
  }
  removeMcpServers(s, l.removeMcpServers);
  if (l.onlyMcpServers)
    std::erase_if(s.mcpServers, [&](const auto& known) {
      return std::find(l.onlyMcpServers->begin(), l.onlyMcpServers->end(), known.value.name) == l.onlyMcpServers->end();
    });
}

/// Applies the repo layer: only values tighter than the current ones.
class RepoTightener {
 public:
  RepoTightener(Settings& s, std::vector<IgnoredKey>& ignored, const std::string& file)
      : s_(s), ignored_(ignored), file_(file) {}

  void apply(const ConfigLayer& l) {
    if (l.cpus) lower("vcpus", *l.cpus, s_.cpus, "vCPUs");
    if (l.memoryMib) lower("memory_mib", *l.memoryMib, s_.memoryMib, "memory");
    if (l.egressProfile) {
      if (*l.egressProfile > s_.egressProfile.value)
        s_.egressProfile = {*l.egressProfile, Layer::kRepo};
      else if (*l.egressProfile < s_.egressProfile.value)
        ignore("egress_profile", fmt::format("would widen egress from {} to {}; a repo config can only narrow it",
                                             profileName(s_.egressProfile.value), profileName(*l.egressProfile)));
    }
    for (const auto& h : l.allowHosts) ignore("allow_hosts: " + h, "a repo config cannot add egress hosts");
    append(s_.removeHosts, l.removeHosts, Layer::kRepo);
    for (unsigned p : l.hostPorts)
      ignore(fmt::format("host_ports: {}", p), "a repo config cannot open ports on your host");
    for (const auto& e : l.envForward)
      ignore("env_forward: " + e, "a repo config cannot forward environment variables (they may hold credentials)");
    for (const auto& e : l.excludes) {
      if (e.starts_with('!'))
        ignore("exclude: " + e, "a repo config can only add excludes; '!' would put files back into the snapshot");
      else
        append(s_.excludes, std::vector<std::string>{e}, Layer::kRepo);
    }
    if (l.workspaceMode == WorkspaceMode::kDirect)
      ignore("workspace_mode: direct",
             "a repo config cannot enable direct mode (your live files, read-write, no review)");
    else if (l.workspaceMode && s_.workspaceMode.value != WorkspaceMode::kSnapshot)
      s_.workspaceMode = {WorkspaceMode::kSnapshot, Layer::kRepo};
    if (l.review == ReviewPolicy::kInteractive) {
      if (!s_.review || s_.review->value != ReviewPolicy::kInteractive)
        s_.review = Sourced<ReviewPolicy>{ReviewPolicy::kInteractive, Layer::kRepo};
    } else if (l.review) {
      ignore(fmt::format("review: {}", reviewPolicyName(*l.review)),
             "a repo config can only force interactive review, never weaken or skip it");
    }
    if (l.image) ignore("image: " + *l.image, "a repo config cannot change the image");
    for (const auto& a : l.agents) ignore("agents: " + a.name, "a repo config cannot define agents");
    if (l.directModeAcknowledged)
      ignore("direct_mode_acknowledged", "only your user config or --yes can acknowledge direct mode");
    if (l.settingsImport == false)
      s_.settingsImport = {false, Layer::kRepo};
    else if (l.settingsImport)
      ignore("settings_import: true", "a repo config can only turn settings_import off");
    if (l.imageVerify) {
      if (*l.imageVerify > s_.imageVerify.value)
        s_.imageVerify = {*l.imageVerify, Layer::kRepo};
      else if (*l.imageVerify < s_.imageVerify.value)
        ignore(fmt::format("image_verify: {}", verifyModeName(*l.imageVerify)),
               fmt::format("would weaken image verification from {}; a repo config can only make it stricter",
                           verifyModeName(s_.imageVerify.value)));
    }
    const char* trust = "a repo config cannot change who is trusted to sign images";
    if (l.imageVerifyKey) ignore("image_verify_key: " + *l.imageVerifyKey, trust);
    if (l.imageVerifyTrustedRoot) ignore("image_verify_trusted_root: " + *l.imageVerifyTrustedRoot, trust);
    if (l.imageVerifyIssuer) ignore("image_verify_issuer: " + *l.imageVerifyIssuer, trust);
    if (l.imageVerifySubject) ignore("image_verify_subject: " + *l.imageVerifySubject, trust);
    if (l.extraCaCerts)
      ignore("extra_ca_certs: " + *l.extraCaCerts, "a repo config cannot add a certificate authority the agent trusts");
    if (l.gitToken) ignore("git_token: " + *l.gitToken, "a repo config cannot hand your git token to the agent");
    for (const auto& h : l.gitHosts) ignore("git_hosts: " + h, "a repo config cannot choose where your git token or SSH agent is used");
    if (l.gitSshAgent == true)
      ignore("git_ssh_agent: true", "a repo config cannot hand your SSH agent to the agent");
    else if (l.gitSshAgent)
      s_.gitSshAgent = {false, Layer::kRepo};
    for (const auto& k : l.gitSshKeys) ignore("git_ssh_keys: " + k, "a repo config cannot choose which of your SSH keys are used");
    if (l.gitSshConfirm == true)
      s_.gitSshConfirm = {true, Layer::kRepo};
    else if (l.gitSshConfirm)
      ignore("git_ssh_confirm: false", "a repo config can only turn git_ssh_confirm on");
    for (const auto& m : l.mcpServers)
      ignore("mcp_servers: " + m.name,
             "a repo config cannot add MCP servers (they run programs the agent talks to); remove_mcp_servers only");
    removeMcpServers(s_, l.removeMcpServers);
  }

 private:
  void ignore(std::string key, std::string reason) { ignored_.push_back({file_, std::move(key), std::move(reason)}); }

  void lower(const char* key, unsigned value, Sourced<unsigned>& current, const char* what) {
    if (value < current.value)
      current = {value, Layer::kRepo};
    else if (value > current.value)
      ignore(fmt::format("{}: {}", key, value),
             fmt::format("would raise {} from {} to {}; a repo config can only lower it", what, current.value, value));
  }

  Settings& s_;
  std::vector<IgnoredKey>& ignored_;
  const std::string& file_;
};

}  // namespace

std::string describe(const IgnoredKey& ignored) {
  // The repo's values are untrusted text on the user's terminal.
  return fmt::format("{}: ignored {}: {}", visibleText(ignored.file), visibleText(ignored.key), ignored.reason);
}

Resolved resolve(const agents::AgentSpec& agent, const ConfigSources& sources) {
  Resolved r;
  Settings& s = r.settings;
  s.cpus = {static_cast<unsigned>(agent.cpus), Layer::kBuiltin};
  s.memoryMib = {static_cast<unsigned>(agent.memoryMib), Layer::kBuiltin};
  s.egressProfile = {EgressProfile::kStandard, Layer::kBuiltin};
  s.workspaceMode = {WorkspaceMode::kSnapshot, Layer::kBuiltin};
  append(s.envForward, agent.envForward, Layer::kBuiltin);
  if (sources.user) applyOver(s, *sources.user, Layer::kUser);
  if (sources.repo) RepoTightener(s, r.ignored, sources.repoPath).apply(*sources.repo);
  applyOver(s, sources.flags, Layer::kFlag);
  return r;
}

Result<> checkDirectMode(const Resolved& resolved, const ConfigSources& sources, bool yes) {
  const Settings& s = resolved.settings;
  if (s.workspaceMode.value != WorkspaceMode::kDirect) return {};
  std::string from = s.workspaceMode.layer == Layer::kFlag ? "--workspace-mode=direct"
                                                           : "workspace_mode: direct (" + sources.userPath + ")";
  if (sources.flags.review)
    return failWith(exit_code::kUsage, "{} has no review; drop --review, or use --workspace-mode=snapshot", from);
  if (!sources.flags.excludes.empty())
    return failWith(exit_code::kUsage,
                    "{} shares the live workspace as it is, so --exclude cannot keep files out; drop --exclude, or "
                    "use --workspace-mode=snapshot", from);
  bool acknowledged = s.directModeAcknowledged.value && s.directModeAcknowledged.layer == Layer::kUser;
  if (!yes && !acknowledged)
    return failWith(exit_code::kUsage,
                    "{} gives the agent your live files read-write with no review; confirm with --yes, or set "
                    "direct_mode_acknowledged: true in {}", from, sources.userPath);
  return {};
}

}  // namespace airlock::config
