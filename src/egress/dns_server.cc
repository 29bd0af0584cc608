#include "egress/dns_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <fmt/format.h>

#include "common/thread_signals.h"
#include "common/exit_codes.h"
#include "egress/addresses.h"
#include "egress/dns_tcp.h"

namespace airlock::egress {
namespace {

Result<Fd> bindGateway(bool v6, bool tcp) {
  Fd s(socket(v6 ? AF_INET6 : AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0));
  if (!s) return failWith(exit_code::kEgress, "cannot open the DNS proxy socket: {}", errnoText(errno));
  int one = 1;
  // The gateway's IPv6 address may still be tentative before QEMU opens the tap.
  setsockopt(s.get(), v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_FREEBIND : IP_FREEBIND, &one, sizeof one);
  if (tcp) setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (v6) setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  sockaddr_storage addr;
  socklen_t len = IpAddress::parse(v6 ? kGatewayV6 : kGatewayV4)->toSockaddr(kDnsPort, addr);
  if (bind(s.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return failWith(exit_code::kEgress, "cannot bind the DNS proxy ({}) on the gateway: {}", tcp ? "TCP" : "UDP",
                    errnoText(errno));
  if (tcp && listen(s.get(), 16) != 0)
    return failWith(exit_code::kEgress, "cannot listen for DNS over TCP on the gateway: {}", errnoText(errno));
  return s;
}

/// Writes all of `data` to a socket (no SIGPIPE); false on error or timeout.
bool sendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<DnsServer>> DnsServer::start(const NetNamespace& netns, DnsAnswerer& answerer, EgressLogFn log,
                                                    std::shared_ptr<BlockedLog> blocked) {
  std::unique_ptr<DnsServer> server(new DnsServer(answerer, std::move(log), std::move(blocked)));
  auto bound = netns.run([&]() -> Result<> {
    Fd* slots[] = {&server->v4_, &server->v6_, &server->tcp4_, &server->tcp6_};
    for (int i = 0; i < 4; ++i) {
      auto s = bindGateway(i % 2 == 1, i >= 2);
      if (!s) return std::unexpected(s.error());
      *slots[i] = std::move(*s);
    }
    return {};
  });
  if (!bound) return std::unexpected(bound.error());
  int stop[2];
  if (pipe2(stop, O_CLOEXEC) != 0) return failWith(exit_code::kEgress, "cannot create a pipe: {}", errnoText(errno));
  server->stopRead_.reset(stop[0]);
  server->stopWrite_.reset(stop[1]);
  server->thread_ = std::thread([raw = server.get()] {
    blockSignalsInThisThread();
    raw->serve();
  });
  return server;
}

DnsServer::~DnsServer() {
  stopWrite_.reset();
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return tcpClients_ == 0; });
}

std::string DnsServer::answer(std::string_view query, const char* transport) {
  DnsOutcome outcome;
  std::string response = answerer_.answer(query, &outcome);
  if (log_)
    log_(fmt::format("dns{} {} {} -> {}{}{}", transport, outcome.type, outcome.name, outcome.verdict,
                     outcome.addresses.empty() ? "" : " " + fmt::format("{}", fmt::join(outcome.addresses, ",")),
                     outcome.rebinding.empty() ? "" : " dropped-internal " + fmt::format("{}", fmt::join(outcome.rebinding, ","))));
  if (blocked_ && !outcome.blocked.empty()) {
    std::string what = outcome.name.empty() ? "(unnamed query)" : outcome.name;
    if (!outcome.type.empty()) what += " " + outcome.type;
    if (!outcome.rebinding.empty()) what += fmt::format(" -> {}", fmt::join(outcome.rebinding, ","));
    blocked_->add(what, outcome.blocked);
  }
  return response;
}

void DnsServer::serve() {
  std::string buf(65535, '\0');
  for (;;) {
    pollfd fds[5] = {{v4_.get(), POLLIN, 0},
                     {v6_.get(), POLLIN, 0},
                     {tcp4_.get(), POLLIN, 0},
                     {tcp6_.get(), POLLIN, 0},
                     {stopRead_.get(), POLLIN, 0}};
    if (poll(fds, 5, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[4].revents) return;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      sockaddr_storage peer{};
      socklen_t peerLen = sizeof peer;
      ssize_t n = recvfrom(fds[i].fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&peer), &peerLen);
      if (n <= 0) continue;
      std::string response = answer(std::string_view(buf.data(), static_cast<size_t>(n)), "");
      if (!response.empty())
        sendto(fds[i].fd, response.data(), response.size(), 0, reinterpret_cast<sockaddr*>(&peer), peerLen);
    }
    for (int i = 2; i < 4; ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      Fd conn(accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) continue;
      std::lock_guard lock(mutex_);
      if (tcpClients_ >= kMaxTcpClients) {
        if (log_) log_(fmt::format("dns/tcp connection refused: {} already open", kMaxTcpClients));
        continue;  // closes conn
      }
      ++tcpClients_;
      std::thread([this, c = std::move(conn)]() mutable { serveTcp(std::move(c)); }).detach();
    }
  }
}

void DnsServer::serveTcp(Fd conn) {
  // A client that stops reading cannot hold the thread (or the destructor) forever.
  timeval sendTimeout{kTcpIdleTimeoutMs / 1000, 0};
  setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, sizeof sendTimeout);
  DnsTcpReader reader;
  char buf[4096];
  for (bool open = true; open;) {
    while (auto query = reader.next()) {
      std::string response = answer(*query, "/tcp");
      if (response.empty() || !sendAll(conn.get(), frameDnsMessage(response))) {
        open = false;  // garbage (no answer) or the client went away: close, as RFC 7766 allows
        break;
      }
    }
    if (!open) break;
    pollfd fds[2] = {{conn.get(), POLLIN, 0}, {stopRead_.get(), POLLIN, 0}};
    int ready = poll(fds, 2, kTcpIdleTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[1].revents) break;
    ssize_t n = read(conn.get(), buf, sizeof buf);
    if (n <= 0) break;
    reader.feed(std::string_view(buf, static_cast<size_t>(n)));
  }
  conn.reset();
  std::lock_guard lock(mutex_);
  --tcpClients_;
  idle_.notify_all();
}

}  // namespace airlock::egress
