#include "egress/dns_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "egress/addresses.h"

namespace airlock::egress {
namespace {

Result<Fd> bindUdp(bool v6) {
  Fd s(socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return failWith(exit_code::kEgress, "cannot open the DNS proxy socket: {}", errnoText(errno));
  int one = 1;
  // The gateway's IPv6 address may still be tentative before QEMU opens the tap.
  setsockopt(s.get(), v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_FREEBIND : IP_FREEBIND, &one, sizeof one);
  sockaddr_storage addr{};
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(kDnsPort);
    inet_pton(AF_INET6, kGatewayV6, &a->sin6_addr);
    setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(kDnsPort);
    inet_pton(AF_INET, kGatewayV4, &a->sin_addr);
    len = sizeof *a;
  }
  if (bind(s.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return failWith(exit_code::kEgress, "cannot bind the DNS proxy on the gateway: {}", errnoText(errno));
  return s;
}

}  // namespace

Result<std::unique_ptr<DnsServer>> DnsServer::start(const NetNamespace& netns, DnsAnswerer& answerer, EgressLogFn log) {
  std::unique_ptr<DnsServer> server(new DnsServer(answerer, std::move(log)));
  auto bound = netns.run([&]() -> Result<> {
    auto v4 = bindUdp(false);
    if (!v4) return std::unexpected(v4.error());
    auto v6 = bindUdp(true);
    if (!v6) return std::unexpected(v6.error());
    server->v4_ = std::move(*v4);
    server->v6_ = std::move(*v6);
    return {};
  });
  if (!bound) return std::unexpected(bound.error());
  int stop[2];
  if (pipe2(stop, O_CLOEXEC) != 0) return failWith(exit_code::kEgress, "cannot create a pipe: {}", errnoText(errno));
  server->stopRead_.reset(stop[0]);
  server->stopWrite_.reset(stop[1]);
  server->thread_ = std::thread([raw = server.get()] { raw->serve(); });
  return server;
}

DnsServer::~DnsServer() {
  stopWrite_.reset();
  if (thread_.joinable()) thread_.join();
}

void DnsServer::serve() {
  std::string buf(65535, '\0');
  for (;;) {
    pollfd fds[3] = {{v4_.get(), POLLIN, 0}, {v6_.get(), POLLIN, 0}, {stopRead_.get(), POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[2].revents) return;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      sockaddr_storage peer{};
      socklen_t peerLen = sizeof peer;
      ssize_t n = recvfrom(fds[i].fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&peer), &peerLen);
      if (n <= 0) continue;
      DnsOutcome outcome;
      std::string response = answerer_.answer(std::string_view(buf.data(), static_cast<size_t>(n)), &outcome);
      if (log_)
        log_(fmt::format("dns {} {} -> {}{}{}", outcome.type, outcome.name, outcome.verdict,
                         outcome.addresses.empty() ? "" : " " + fmt::format("{}", fmt::join(outcome.addresses, ",")),
                         outcome.rebinding.empty() ? "" : " dropped-internal " + fmt::format("{}", fmt::join(outcome.rebinding, ","))));
      if (!response.empty())
        sendto(fds[i].fd, response.data(), response.size(), 0, reinterpret_cast<sockaddr*>(&peer), peerLen);
    }
  }
}

}  // namespace airlock::egress
