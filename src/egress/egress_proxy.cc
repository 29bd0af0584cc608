#include "egress/egress_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <fmt/format.h>

#include "common/thread_signals.h"
#include "common/exit_codes.h"
#include "egress/addresses.h"
#include "egress/first_bytes.h"
#include "egress/stream_relay.h"

namespace airlock::egress {

struct EgressProxy::Shared {
  Policy policy;
  std::shared_ptr<const AddressBook> book;
  std::set<IpAddress> hostAddresses;
  EgressLogFn log;
  std::shared_ptr<BlockedLog> blocked;
  int maxConnections = EgressProxy::kDefaultMaxConnections;
  std::map<uint16_t, GatewayService> services;
  EgressLogFn sessionLog;  ///< never empty
  std::atomic<int> active{0};
  Fd listener;
  void note(const std::string& line) const {
    if (log) log(line);
  }
  /// Logs a refusal and adds it to the blocked summary.
  void refuse(const std::string& what, const std::string& reason) const {
    note(fmt::format("tcp {} blocked: {}", what, reason));
    if (blocked) blocked->add(what, reason);
  }
};

namespace {

constexpr int kFirstBytesTimeoutMs = 10000;
/// SSH, admitted without a name in its first bytes (sshIdentification()).
constexpr uint16_t kSshPort = 22;
constexpr int kConnectTimeoutMs = 10000;

struct Destination {
  IpAddress address;
  uint16_t port = 0;
};

std::optional<Destination> originalDestination(int fd) {
  sockaddr_in6 local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return std::nullopt;
  Destination d;
  if (IN6_IS_ADDR_V4MAPPED(&local.sin6_addr)) {
    sockaddr_in dst{};
    len = sizeof dst;
    if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) != 0) return std::nullopt;
    d.address = *IpAddress::fromBytes(reinterpret_cast<uint8_t*>(&dst.sin_addr), 4);
    d.port = ntohs(dst.sin_port);
    return d;
  }
  sockaddr_in6 dst{};
  len = sizeof dst;
  if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len) != 0) return std::nullopt;
  d.address = *IpAddress::fromBytes(reinterpret_cast<uint8_t*>(&dst.sin6_addr), 16);
  d.port = ntohs(dst.sin6_port);
  return d;
}

std::string text(const Destination& d) {
  return d.address.v6 ? fmt::format("[{}]:{}", d.address.toString(), d.port)
                      : fmt::format("{}:{}", d.address.toString(), d.port);
}

/// Reads the connection's first bytes into `buffered` until `decided`
/// says they are enough; false when the client stops first (EOF, an error,
/// or kFirstBytesTimeoutMs without a byte).
bool readUntilDecided(int fd, std::string& buffered, const std::function<bool(std::string_view)>& decided) {
  char buf[4096];
  while (!decided(buffered)) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, kFirstBytesTimeoutMs) != 1) return false;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    buffered.append(buf, static_cast<size_t>(n));
  }
  return true;
}

/// Reads the connection's first bytes until a name can be decided.
RequestedName readRequestedName(int fd, std::string& buffered) {
  RequestedName r;
  auto decided = [&](std::string_view bytes) {
    r = requestedName(bytes);
    return r.state != RequestedName::State::kIncomplete || bytes.size() > 65536;
  };
  return readUntilDecided(fd, buffered, decided) ? r : RequestedName{RequestedName::State::kNone, "", false};
}

/// Reads the connection's first bytes until they are, or cannot be, an SSH
/// identification string.
SshIdentification readSshIdentification(int fd, std::string& buffered) {
  SshIdentification r = SshIdentification::kIncomplete;
  auto decided = [&](std::string_view bytes) {
    return (r = sshIdentification(bytes)) != SshIdentification::kIncomplete;
  };
  return readUntilDecided(fd, buffered, decided) ? r : SshIdentification::kNo;
}

bool isGateway(const IpAddress& a) { return a == *IpAddress::parse(kGatewayV4) || a == *IpAddress::parse(kGatewayV6); }

void handle(const std::shared_ptr<EgressProxy::Shared>& shared, Fd guest);

}  // namespace

Result<std::unique_ptr<EgressProxy>> EgressProxy::start(const NetNamespace& netns, Policy policy,
                                                        std::shared_ptr<const AddressBook> book,
                                                        std::set<IpAddress> hostAddresses, EgressLogFn log,
                                                        std::shared_ptr<BlockedLog> blocked, int maxConnections,
                                                        std::map<uint16_t, GatewayService> services,
                                                        EgressLogFn sessionLog) {
  auto shared = std::make_shared<Shared>();
  shared->policy = std::move(policy);
  shared->book = std::move(book);
  shared->hostAddresses = std::move(hostAddresses);
  shared->log = std::move(log);
  shared->blocked = std::move(blocked);
  shared->maxConnections = maxConnections;
  shared->services = std::move(services);
  shared->sessionLog = sessionLog ? std::move(sessionLog) : EgressLogFn([](const std::string&) {});
  auto bound = netns.run([&]() -> Result<> {
    Fd s(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int zero = 0, one = 1;
    if (!s) return failWith(exit_code::kEgress, "cannot open the egress proxy socket: {}", errnoText(errno));
    setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_port = htons(kProxyPort);
    if (bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(s.get(), 128) != 0)
      return failWith(exit_code::kEgress, "cannot listen for the egress proxy: {}", errnoText(errno));
    shared->listener = std::move(s);
    return {};
  });
  if (!bound) return std::unexpected(bound.error());
  std::unique_ptr<EgressProxy> proxy(new EgressProxy(shared));
  proxy->acceptor_ = std::thread([shared] {
    blockSignalsInThisThread();  // and its connection threads, which inherit the mask
    for (;;) {
      Fd conn(accept4(shared->listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      if (shared->active.load() >= shared->maxConnections) {
        auto dest = originalDestination(conn.get());
        shared->refuse(dest ? text(*dest) : "?",
                       fmt::format("more than {} concurrent proxied connections", shared->maxConnections));
        continue;  // closes conn
      }
      ++shared->active;
      std::thread([shared, c = std::move(conn)]() mutable {
        handle(shared, std::move(c));
        --shared->active;
      }).detach();
    }
  });
  return proxy;
}

EgressProxy::~EgressProxy() {
  shutdown(shared_->listener.get(), SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
}

namespace {

void handle(const std::shared_ptr<EgressProxy::Shared>& shared, Fd guest) {
  auto dest = originalDestination(guest.get());
  if (!dest) return;
  std::string buffered;
  IpAddress upstreamAddress = dest->address;
  uint16_t upstreamPort = dest->port;
  std::string label = text(*dest);
  if (isGateway(dest->address)) {
    if (auto service = shared->services.find(dest->port); service != shared->services.end()) {
      shared->note(fmt::format("tcp {} to a host service", label));
      service->second(std::move(guest), shared->log, shared->sessionLog);
      return;
    }
    upstreamPort = shared->policy.hostPortFor(dest->port);
    if (!upstreamPort) {
      shared->refuse(label, "gateway port without a --host-port mapping");
      return;
    }
    upstreamAddress = *IpAddress::parse("127.0.0.1");
    label = fmt::format("{} (host 127.0.0.1:{})", label, upstreamPort);
  } else if (isInternal(dest->address) || shared->hostAddresses.count(dest->address)) {
    shared->refuse(label, "an internal address (loopback, private, link-local, v4-mapped) or one of the host's own: "
                          "never reachable, in any profile");
    return;
  } else if (shared->policy.profile != Profile::kPermissive) {
    std::vector<std::string> answered = shared->book->namesFor(dest->address);
    std::vector<std::string> names;
    for (const auto& name : answered)
      if (shared->policy.allowsConnection(name, dest->port)) names.push_back(name);
    if (answered.empty()) {
      shared->refuse(label, "address not answered by the DNS proxy for an allowed name (or its TTL expired)");
      return;
    }
    if (names.empty()) {
      shared->refuse(label, fmt::format("port {} not allowed for {}", dest->port, fmt::join(answered, "|")));
      return;
    }
    if (dest->port == kSshPort) {
      // Only a name allowed with :22 gets here (the default ports are 80 and 443).
      if (readSshIdentification(guest.get(), buffered) != SshIdentification::kYes) {
        shared->refuse(label, "not an SSH client's identification on port 22");
        return;
      }
      label = fmt::format("{} (ssh {})", label, fmt::join(names, "|"));
    } else {
      RequestedName requested = readRequestedName(guest.get(), buffered);
      if (requested.state != RequestedName::State::kFound) {
        shared->refuse(label, "no TLS SNI or HTTP Host header in the first bytes");
        return;
      }
      if (std::find(names.begin(), names.end(), requested.name) == names.end()) {
        const char* kind = requested.tls ? "SNI" : "Host";
        shared->refuse(
            fmt::format("{} {} {}", label, kind, requested.name),
            fmt::format("{} is not the allowed name the address was answered for ({})", kind, fmt::join(names, "|")));
        return;
      }
      label = fmt::format("{} ({})", label, requested.name);
    }
  }
  Fd upstream = connectTcp(upstreamAddress, upstreamPort, kConnectTimeoutMs);
  if (!upstream) {
    shared->note(fmt::format("tcp {} upstream connect failed", label));
    return;
  }
  shared->note(fmt::format("tcp {} allowed", label));
  if (!buffered.empty() && !writeAll(upstream.get(), buffered)) return;
  relayBothWays(guest.get(), upstream.get());
}

}  // namespace

}  // namespace airlock::egress
