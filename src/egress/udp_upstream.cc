#include "egress/udp_upstream.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <sstream>

#include "common/exit_codes.h"
#include "common/fd.h"

namespace airlock::egress {

Result<IpAddress> UdpUpstream::nameserverFrom(const std::string& resolvConf) {
  auto text = readFile(resolvConf);
  if (!text) return failWith(exit_code::kEgress, "cannot read {} for the upstream resolver: {}", resolvConf, text.error().message);
  std::istringstream in(*text);
  std::string key, value;
  while (in >> key) {
    std::getline(in, value);
    std::istringstream v(value);
    v >> value;
    if (key != "nameserver") continue;
    if (auto address = IpAddress::parse(value.substr(0, value.find('%')))) return *address;
  }
  return failWith(exit_code::kEgress, "no nameserver in {}; the DNS proxy needs an upstream resolver", resolvConf);
}

Result<std::string> UdpUpstream::exchange(const std::string& query) {
  Fd s(socket(server_.v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return fail("cannot open a DNS socket: {}", errnoText(errno));
  sockaddr_storage addr;
  socklen_t len = server_.toSockaddr(port_, addr);
  // connect() makes the kernel drop datagrams from anyone but the server.
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 || send(s.get(), query.data(), query.size(), 0) < 0)
    return fail("cannot reach the upstream resolver {}: {}", server_.toString(), errnoText(errno));
  pollfd p{s.get(), POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout_.count())) != 1) return fail("the upstream resolver did not answer");
  std::string buf(65535, '\0');
  ssize_t n = recv(s.get(), buf.data(), buf.size(), 0);
  if (n < 0) return fail("upstream resolver: {}", errnoText(errno));
  buf.resize(static_cast<size_t>(n));
  return buf;
}

}  // namespace airlock::egress
