#pragma once
// The egress allowlist a run would get, as data: the profile, every allowed
// host with its ports and where it came from, and the host-port mappings.
// egressPolicy() turns it into the egress::Policy the firewall enforces.

#include <string>
#include <vector>

#include "agents/agent_spec.h"
#include "common/error.h"
#include "config/settings.h"
#include "egress/policy.h"

namespace airlock::config {

/// The port allowed for a host listed without ":PORT" (TLS only).
inline constexpr unsigned kHttpsPort = 443;
/// What --git-ssh-agent opens on the git hosts.
inline constexpr unsigned kSshPort = 22;

/// One allowed host.
struct AllowedHost {
  std::string host;             ///< DNS name
  std::vector<unsigned> ports;  ///< allowed TCP ports
  std::string why;              ///< "model API", "common developer host", "agent extra host", "allow_hosts", "git_ssh_agent"
  Layer layer = Layer::kBuiltin;

  bool operator==(const AllowedHost&) const = default;
};

/// The egress of one run.
struct EgressPlan {
  Sourced<EgressProfile> profile;
  bool anyHost = false;            ///< permissive: every host, every TCP port
  std::vector<AllowedHost> hosts;  ///< standard and locked: the allowlist
  std::vector<Sourced<std::string>> removed;  ///< remove_hosts entries applied
};

/// Hosts the standard profile allows besides the model API: source hosting,
/// package registries and Debian mirrors (documented in README.md).
const std::vector<std::string>& commonDeveloperHosts();

/// The plan for `agent` under `settings`: locked = the agent's model hosts;
/// standard = those + commonDeveloperHosts() + the agent's extra hosts;
/// permissive = any host. allow_hosts entries (HOST or HOST:PORT) are added
/// in standard and locked, then remove_hosts entries are taken out.
/// Hosts without a port get kHttpsPort. With git_ssh_agent, each git host
/// (git_hosts without their ports, or github.com) gets kSshPort.
EgressPlan egressPlan(const agents::AgentSpec& agent, const Settings& settings);

/// The hosts whose port 22 git_ssh_agent opens: git_hosts by name (without
/// their ports), each once, or github.com; none without git_ssh_agent.
std::vector<std::string> gitSshHosts(const Settings& settings);

/// The policy the egress firewall enforces for `plan`, with the host loopback
/// ports reachable at the gateway. Fails (kUsage) on a host entry that is not
/// a DNS name (egress::parseHostRule).
Result<egress::Policy> egressPolicy(const EgressPlan& plan, std::vector<egress::HostPort> hostPorts);

/// The policy `airlock run` enforces for `agent` under `settings`, and what
/// `airlock info` shows: egressPolicy(egressPlan(agent, settings)) with the
/// --host-port mappings `flagHostPorts` first, then each settings.hostPorts
/// entry PORT as PORT:PORT.
Result<egress::Policy> runEgressPolicy(const agents::AgentSpec& agent, const Settings& settings,
                                       std::vector<egress::HostPort> flagHostPorts);

}  // namespace airlock::config
