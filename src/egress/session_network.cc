#include "egress/session_network.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstdio>
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/visible_text.h"
#include "egress/nft.h"
#include "egress/ruleset.h"
#include "egress/tap.h"

namespace airlock::egress {
namespace {

/// The host's own addresses (this thread's namespace): never a DNS answer,
/// never a destination.
std::set<IpAddress> hostAddresses() {
  std::set<IpAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      out.insert(*IpAddress::fromBytes(reinterpret_cast<uint8_t*>(&a->sin_addr), 4));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      out.insert(*IpAddress::fromBytes(reinterpret_cast<uint8_t*>(&a->sin6_addr), 16));
    }
  }
  freeifaddrs(list);
  return out;
}

/// Appends timestamped lines to the session's egress log (and stderr with --egress-log).
EgressLogFn makeLog(const std::string& path, bool toStderr) {
  auto file = std::make_shared<Fd>(path.empty() ? -1 : open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  return [file, toStderr](const std::string& raw) {
    std::string line = visibleText(raw);  // names in it are the guest's (DNS, SNI, Host)
    std::string text = fmt::format("{:%Y-%m-%dT%H:%M:%SZ} {}\n", fmt::gmtime(std::time(nullptr)), line);
    if (*file) writeAll(file->get(), text);
    if (toStderr) std::fprintf(stderr, "airlock: egress: %s\n", line.c_str());
  };
}

}  // namespace

Result<std::unique_ptr<SessionNetwork>> SessionNetwork::start(Policy policy, NetworkOptions options) {
  IpAddress resolver;
  if (options.resolver) {
    resolver = *options.resolver;
  } else {
    auto found = UdpUpstream::nameserverFrom();
    if (!found) return std::unexpected(found.error());
    resolver = *found;
  }
  auto netns = NetNamespace::create();
  if (!netns) return std::unexpected(netns.error());
  std::unique_ptr<SessionNetwork> net(new SessionNetwork(std::move(*netns), std::move(policy)));
  auto setup = net->netns_.run([&]() -> Result<> {
    auto created = createGatewayTap();
    if (!created) return std::unexpected(created.error());
    net->tap_ = std::move(*created);
    return loadRuleset(renderRuleset(net->policy_.profile));
  });
  if (!setup) return std::unexpected(setup.error());
  EgressLogFn log = makeLog(options.logPath, net->policy_.log);
  net->log_ = log;
  net->book_ = std::make_shared<AddressBook>(options.ttlFloor, options.ttlCeiling);
  net->upstream_ = std::make_unique<UdpUpstream>(resolver, options.resolverPort);
  const std::set<IpAddress> host = hostAddresses();
  net->answerer_ = std::make_unique<DnsAnswerer>(net->policy_, *net->book_, *net->upstream_, host);
  auto dns = DnsServer::start(net->netns_, *net->answerer_, log, net->blocked_);
  if (!dns) return std::unexpected(dns.error());
  net->dns_ = std::move(*dns);
  auto proxy =
      EgressProxy::start(net->netns_, net->policy_, net->book_, host, log, net->blocked_, options.maxConnections,
                         std::move(options.gatewayServices), std::move(options.sessionLog));
  if (!proxy) return std::unexpected(proxy.error());
  net->proxy_ = std::move(*proxy);
  return net;
}

SessionNetwork::~SessionNetwork() {
  proxy_.reset();
  dns_.reset();
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
