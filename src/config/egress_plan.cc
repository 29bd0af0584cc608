#include "config/egress_plan.h"

#include <algorithm>
#include <charconv>

namespace airlock::config {
namespace {

void addHost(std::vector<AllowedHost>& hosts, const std::string& host, std::vector<unsigned> ports,
             const std::string& why, Layer layer) {
  auto it = std::find_if(hosts.begin(), hosts.end(), [&](const AllowedHost& h) { return h.host == host; });
  if (it == hosts.end()) {
    hosts.push_back({host, std::move(ports), why, layer});
    return;
  }
  for (unsigned p : ports)
    if (std::find(it->ports.begin(), it->ports.end(), p) == it->ports.end()) it->ports.push_back(p);
  std::sort(it->ports.begin(), it->ports.end());
}

}  // namespace

const std::vector<std::string>& commonDeveloperHosts() {
  static const std::vector<std::string> hosts = {
      "github.com",           "api.github.com",         "codeload.github.com",
      "objects.githubusercontent.com", "raw.githubusercontent.com", "gitlab.com",
      "registry.npmjs.org",   "registry.yarnpkg.com",   "pypi.org",
      "files.pythonhosted.org", "crates.io",            "index.crates.io",
      "static.crates.io",     "proxy.golang.org",       "sum.golang.org",
      "rubygems.org",         "repo.maven.apache.org",  "repo1.maven.org",
      "registry-1.docker.io", "auth.docker.io",         "production.cloudflare.docker.com",
      "ghcr.io",              "pkg-containers.githubusercontent.com",
      "deb.debian.org",       "security.debian.org",    "archive.ubuntu.com",
      "security.ubuntu.com",
  };
  return hosts;
}

std::vector<std::string> gitSshHosts(const Settings& settings) {
  std::vector<std::string> hosts;
  if (!settings.gitSshAgent.value) return hosts;
  for (const auto& h : settings.gitHosts)
    if (std::string name = h.value.substr(0, h.value.find(':'));
        std::find(hosts.begin(), hosts.end(), name) == hosts.end())
      hosts.push_back(name);
  if (hosts.empty()) hosts.push_back("github.com");
  return hosts;
}

EgressPlan egressPlan(const agents::AgentSpec& agent, const Settings& settings) {
  EgressPlan plan;
  plan.profile = settings.egressProfile;
  if (plan.profile.value == EgressProfile::kPermissive) {
    plan.anyHost = true;
    return plan;
  }
  bool standard = plan.profile.value == EgressProfile::kStandard;
  const std::vector<unsigned> ports = {kHttpsPort};
  for (const auto& h : agent.egress.modelHosts) addHost(plan.hosts, h, ports, "model API", Layer::kBuiltin);
  if (standard) {
    for (const auto& h : commonDeveloperHosts()) addHost(plan.hosts, h, ports, "common developer host", Layer::kBuiltin);
    for (const auto& h : agent.egress.extraHosts) addHost(plan.hosts, h, ports, "agent extra host", Layer::kBuiltin);
  }
  for (const auto& entry : settings.allowHosts) {
    const std::string& text = entry.value;
    auto colon = text.find(':');
    if (colon == std::string::npos) {
      addHost(plan.hosts, text, ports, "allow_hosts", entry.layer);
      continue;
    }
    unsigned port = 0;
    std::from_chars(text.data() + colon + 1, text.data() + text.size(), port);
    addHost(plan.hosts, text.substr(0, colon), {port}, "allow_hosts", entry.layer);
  }
  // --git-ssh-agent: port 22 of each git host (cli/git_ssh_agent.h), before
  // remove_hosts, which may still close it.
  // An entry of its own, so that `airlock info` says why port 22 is open.
  for (const auto& h : gitSshHosts(settings))
    plan.hosts.push_back({h, {kSshPort}, "git_ssh_agent", settings.gitSshAgent.layer});
  for (const auto& entry : settings.removeHosts) {
    std::string host = entry.value.substr(0, entry.value.find(':'));
    auto it = std::remove_if(plan.hosts.begin(), plan.hosts.end(), [&](const AllowedHost& h) { return h.host == host; });
    if (it != plan.hosts.end()) plan.removed.push_back(entry);
    plan.hosts.erase(it, plan.hosts.end());
  }
  return plan;
}

Result<egress::Policy> egressPolicy(const EgressPlan& plan, std::vector<egress::HostPort> hostPorts) {
  egress::Policy policy;
  policy.profile = plan.profile.value;
  policy.hostPorts = std::move(hostPorts);
  if (plan.anyHost) return policy;
  for (const auto& allowed : plan.hosts) {
    auto rule = egress::parseHostRule(allowed.host);
    if (!rule) return std::unexpected(rule.error());
    for (unsigned port : allowed.ports) rule->ports.push_back(static_cast<uint16_t>(port));
    policy.hosts.push_back(std::move(*rule));
  }
  return policy;
}

Result<egress::Policy> runEgressPolicy(const agents::AgentSpec& agent, const Settings& settings,
                                       std::vector<egress::HostPort> flagHostPorts) {
  for (const auto& port : settings.hostPorts)
    flagHostPorts.push_back({static_cast<uint16_t>(port.value), static_cast<uint16_t>(port.value)});
  return egressPolicy(egressPlan(agent, settings), std::move(flagHostPorts));
}

}  // namespace airlock::config
