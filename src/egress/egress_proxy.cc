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
#include <cstring>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "egress/addresses.h"
#include "egress/first_bytes.h"

namespace airlock::egress {

struct EgressProxy::Shared {
  Policy policy;
  std::shared_ptr<const AddressBook> book;
  EgressLogFn log;
  Fd listener;
  void note(const std::string& line) const {
    if (log) log(line);
  }
};

namespace {

constexpr int kFirstBytesTimeoutMs = 10000;
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

/// Connects (from this thread's namespace: the host's) with a timeout.
Fd connectTo(const IpAddress& address, uint16_t port) {
  Fd s(socket(address.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) return {};
  sockaddr_storage addr{};
  socklen_t len;
  if (address.v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    std::memcpy(&a->sin6_addr, address.bytes.data(), 16);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    std::memcpy(&a->sin_addr, address.bytes.data(), 4);
    len = sizeof *a;
  }
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (errno != EINPROGRESS) return {};
    pollfd p{s.get(), POLLOUT, 0};
    int err = 0;
    socklen_t errLen = sizeof err;
    if (poll(&p, 1, kConnectTimeoutMs) != 1 || getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &errLen) != 0 || err)
      return {};
  }
  fcntl(s.get(), F_SETFL, 0);
  return s;
}

/// Moves bytes from `in` to `out` through a pipe with splice(2) until EOF.
void pump(int in, int out) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  Fd r(p[0]), w(p[1]);
  for (;;) {
    ssize_t n = splice(in, nullptr, w.get(), nullptr, 1 << 16, SPLICE_F_MOVE);
    if (n <= 0) break;
    while (n > 0) {
      ssize_t m = splice(r.get(), nullptr, out, nullptr, static_cast<size_t>(n), SPLICE_F_MOVE);
      if (m <= 0) {
        shutdown(in, SHUT_RD);
        return;
      }
      n -= m;
    }
  }
  shutdown(out, SHUT_WR);
}

/// Reads the connection's first bytes until a name can be decided.
RequestedName readRequestedName(int fd, std::string& buffered) {
  char buf[4096];
  for (;;) {
    RequestedName r = requestedName(buffered);
    if (r.state != RequestedName::State::kIncomplete || buffered.size() > 65536) return r;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, kFirstBytesTimeoutMs) != 1) return {RequestedName::State::kNone, "", false};
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return {RequestedName::State::kNone, "", false};
    buffered.append(buf, static_cast<size_t>(n));
  }
}

bool isGateway(const IpAddress& a) {
  return a == *IpAddress::parse(kGatewayV4) || a == *IpAddress::parse(kGatewayV6);
}

void handle(const std::shared_ptr<EgressProxy::Shared>& shared, Fd guest);

}  // namespace

Result<std::unique_ptr<EgressProxy>> EgressProxy::start(const NetNamespace& netns, Policy policy,
                                                        std::shared_ptr<const AddressBook> book, EgressLogFn log) {
  auto shared = std::make_shared<Shared>(Shared{std::move(policy), std::move(book), std::move(log), {}});
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
    for (;;) {
      Fd conn(accept4(shared->listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::thread(handle, shared, std::move(conn)).detach();
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
    upstreamPort = shared->policy.hostPortFor(dest->port);
    if (!upstreamPort) {
      shared->note(fmt::format("tcp {} blocked: no --host-port mapping", label));
      return;
    }
    upstreamAddress = *IpAddress::parse("127.0.0.1");
    label = fmt::format("{} (host 127.0.0.1:{})", label, upstreamPort);
  } else if (shared->policy.profile != Profile::kPermissive) {
    std::vector<std::string> names;
    for (const auto& name : shared->book->namesFor(dest->address))
      if (shared->policy.allowsConnection(name, dest->port)) names.push_back(name);
    if (names.empty()) {
      shared->note(fmt::format("tcp {} blocked: not answered by the DNS proxy for an allowed name and port", label));
      return;
    }
    RequestedName requested = readRequestedName(guest.get(), buffered);
    if (requested.state != RequestedName::State::kFound ||
        std::find(names.begin(), names.end(), requested.name) == names.end()) {
      shared->note(fmt::format("tcp {} blocked: {} '{}' is not {}", label, requested.tls ? "SNI" : "Host",
                               requested.name, fmt::join(names, "|")));
      return;
    }
    label = fmt::format("{} ({})", label, requested.name);
  }
  Fd upstream = connectTo(upstreamAddress, upstreamPort);
  if (!upstream) {
    shared->note(fmt::format("tcp {} upstream connect failed", label));
    return;
  }
  shared->note(fmt::format("tcp {} allowed", label));
  if (!buffered.empty() && !writeAll(upstream.get(), buffered)) return;
  std::thread back(pump, upstream.get(), guest.get());
  pump(guest.get(), upstream.get());
  back.join();
}

}  // namespace

}  // namespace airlock::egress
