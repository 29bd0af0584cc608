#include "egress/stream_relay.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace airlock::egress {
namespace {

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

}  // namespace

Fd connectTcp(const IpAddress& address, uint16_t port, int timeoutMs) {
  Fd s(socket(address.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) return {};
  sockaddr_storage addr;
  socklen_t len = address.toSockaddr(port, addr);
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (errno != EINPROGRESS) return {};
    pollfd p{s.get(), POLLOUT, 0};
    int err = 0;
    socklen_t errLen = sizeof err;
    if (poll(&p, 1, timeoutMs) != 1 || getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &errLen) != 0 || err)
      return {};
  }
  fcntl(s.get(), F_SETFL, 0);
  return s;
}

void relayBothWays(int a, int b) {
  std::thread back(pump, b, a);
  pump(a, b);
  back.join();
}

}  // namespace airlock::egress
