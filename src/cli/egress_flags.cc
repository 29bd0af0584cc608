#include "cli/egress_flags.h"

#include <cstdio>

#include <fmt/format.h>

#include "cli/repeatable.h"
#include "config/egress_plan.h"

namespace airlock::cli {

void addEgressFlags(CLI::App& cmd, EgressFlags& flags, const std::string& defaultProfile) {
  cmd.add_option("--egress-profile", flags.profile,
                 "Network policy: locked (only the agent's model API and --allow-host hosts), standard (+ GitHub, "
                 "package registries, Debian/Ubuntu archives) or permissive (any public TCP host; no UDP but DNS; "
                 "never your host or private addresses). Default: " + defaultProfile)
      ->check(CLI::IsMember({"permissive", "standard", "locked"}));
  repeatable(cmd.add_option("--allow-host", flags.allowHosts,
                 "Also allow HOST[:PORT] (a DNS name; '*.example.com' for names below it; no IP literals; default "
                 "port 443); repeatable"));
  repeatable(cmd.add_option("--host-port", flags.hostPorts,
                 "PORT[:GUESTPORT]: the TCP port PORT on your 127.0.0.1 (a local model server, a dev database) is "
                 "reachable in the guest at 10.0.2.2:GUESTPORT; nothing else on your host is; repeatable"));
  repeatable(cmd.add_option("--publish", flags.publish,
                 "HOSTPORT[:GUESTPORT]: a server in the guest listening on GUESTPORT is reachable on your "
                 "127.0.0.1:HOSTPORT (only there); repeatable"));
  cmd.add_flag("--egress-log", flags.log, "Print every allowed and blocked connection and DNS query as it happens");
}

Result<> checkAllowHosts(const EgressFlags& flags) {
  for (const auto& host : flags.allowHosts)
    if (auto rule = egress::parseHostRule(host); !rule)
      return failWith(rule.error().code, "--allow-host {}", rule.error().message);
  return {};
}

Result<std::vector<egress::HostPort>> parseHostPorts(const std::vector<std::string>& values, std::string_view flag) {
  std::vector<egress::HostPort> out;
  for (const auto& value : values) {
    auto mapping = egress::parseHostPort(value, flag);
    if (!mapping) return std::unexpected(mapping.error());
    out.push_back(*mapping);
  }
  return out;
}

void reportBlocked(const egress::SessionNetwork& network, const std::string& details) {
  std::vector<std::string> lines;
  for (const auto& entry : network.blocked())
    lines.push_back(fmt::format("{} ({}): {}x", entry.what, entry.reason, entry.count));
  if (auto counters = network.dropCounters())
    for (const auto& [name, packets] : *counters)
      if (packets > 0 && name.starts_with("drop_"))
        lines.push_back(fmt::format("{} packets dropped by firewall rule {}", packets, name));
  if (lines.empty()) return;
  std::fprintf(stderr, "airlock: egress blocked during this session (details: %s):\n", details.c_str());
  for (const auto& line : lines) std::fprintf(stderr, "airlock:   %s\n", line.c_str());
}

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

}  // namespace airlock::cli
