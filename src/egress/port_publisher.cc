#include "egress/port_publisher.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/thread_signals.h"
#include "common/exit_codes.h"
#include "egress/addresses.h"
#include "egress/stream_relay.h"

namespace airlock::egress {
namespace {

constexpr int kGuestConnectTimeoutMs = 5000;

/// Joins one host connection to the guest's port, dialled from the namespace.
void serve(std::shared_ptr<const NetNamespace> netns, Fd client, HostPort port, const EgressLogFn& log) {
  Fd guest;
  auto dialled = netns->run([&]() -> Result<> {
    guest = connectTcp(*IpAddress::parse(kGuestV4), port.guestPort, kGuestConnectTimeoutMs);
    return {};
  });
  if (!dialled || !guest) {
    log(fmt::format("publish 127.0.0.1:{} -> guest port {}: nothing listening in the guest", port.hostPort,
                    port.guestPort));
    return;
  }
  relayBothWays(client.get(), guest.get());
}

}  // namespace

Result<std::unique_ptr<PortPublisher>> PortPublisher::start(const NetNamespace& netns, HostPort port, EgressLogFn log) {
  std::unique_ptr<PortPublisher> publisher(new PortPublisher());
  publisher->listener_.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  publisher->stop_.reset(eventfd(0, EFD_CLOEXEC));
  if (!publisher->listener_ || !publisher->stop_)
    return failWith(exit_code::kEgress, "--publish: cannot create a socket: {}", errnoText(errno));
  int one = 1;
  setsockopt(publisher->listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port.hostPort);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(publisher->listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(publisher->listener_.get(), 64) != 0)
    return failWith(exit_code::kUsage, "--publish {}:{}: cannot listen on 127.0.0.1:{}: {}; pick another host port",
                    port.hostPort, port.guestPort, port.hostPort, errnoText(errno));
  // The namespace fd must outlive the connection threads: they get a copy.
  auto ns = std::make_shared<const NetNamespace>(netns.duplicate());
  publisher->acceptor_ = std::thread([listener = publisher->listener_.get(), stop = publisher->stop_.get(), ns, port,
                                      log = std::move(log)] {
    blockSignalsInThisThread();
    for (;;) {
      pollfd fds[2] = {{listener, POLLIN, 0}, {stop, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents) return;
      if (!fds[0].revents) continue;
      Fd client(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (!client) continue;
      std::thread(serve, ns, std::move(client), port, log).detach();
    }
  });
  return publisher;
}

PortPublisher::~PortPublisher() {
  uint64_t one = 1;
  (void)!write(stop_.get(), &one, sizeof one);
  if (acceptor_.joinable()) acceptor_.join();
}

}  // namespace airlock::egress
