#include "egress/session_network.h"

#include "egress/nft.h"
#include "egress/ruleset.h"
#include "egress/tap.h"

namespace airlock::egress {

Result<std::unique_ptr<SessionNetwork>> SessionNetwork::start(Policy policy) {
  auto netns = NetNamespace::create();
  if (!netns) return std::unexpected(netns.error());
  Fd tap;
  auto setup = netns->run([&]() -> Result<> {
    auto created = createGatewayTap();
    if (!created) return std::unexpected(created.error());
    tap = std::move(*created);
    return loadRuleset(renderRuleset(policy.profile));
  });
  if (!setup) return std::unexpected(setup.error());
  return std::unique_ptr<SessionNetwork>(new SessionNetwork(std::move(*netns), std::move(tap), std::move(policy)));
}

Result<std::map<std::string, uint64_t>> SessionNetwork::dropCounters() const {
  std::map<std::string, uint64_t> counters;
  auto r = netns_.run([&]() -> Result<> {
    auto read = readCounters();
    if (!read) return std::unexpected(read.error());
    counters = std::move(*read);
    return {};
  });
  if (!r) return std::unexpected(r.error());
  return counters;
}

}  // namespace airlock::egress
