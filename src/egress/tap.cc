#include "egress/tap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/exit_codes.h"
#include "egress/addresses.h"

namespace airlock::egress {
namespace {

/// Kernel ABI of SIOCSIFADDR on an AF_INET6 socket (linux/ipv6.h clashes with netinet/in.h).
struct In6Ifreq {
  in6_addr addr;
  uint32_t prefixLen;
  int ifindex;
};

Result<> interfaceUp(int s, const char* name) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) return failWith(exit_code::kEgress, "cannot read {} flags: {}", name, errnoText(errno));
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) return failWith(exit_code::kEgress, "cannot bring {} up: {}", name, errnoText(errno));
  return {};
}

Result<> addIpv4(int s, const char* name, const char* address, unsigned prefix) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  auto* sin = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
  sin->sin_family = AF_INET;
  inet_pton(AF_INET, address, &sin->sin_addr);
  if (ioctl(s, SIOCSIFADDR, &ifr) != 0)
    return failWith(exit_code::kEgress, "cannot set {} on {}: {}", address, name, errnoText(errno));
  sin->sin_addr.s_addr = htonl(~0u << (32 - prefix));
  if (ioctl(s, SIOCSIFNETMASK, &ifr) != 0)
    return failWith(exit_code::kEgress, "cannot set the netmask on {}: {}", name, errnoText(errno));
  return {};
}

Result<> addIpv6(const char* name, const char* address, unsigned prefix) {
  Fd s6(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s6) return failWith(exit_code::kEgress, "no IPv6 on this host: {}", errnoText(errno));
  In6Ifreq req{};
  inet_pton(AF_INET6, address, &req.addr);
  req.prefixLen = prefix;
  req.ifindex = static_cast<int>(if_nametoindex(name));
  if (ioctl(s6.get(), SIOCSIFADDR, &req) != 0)
    return failWith(exit_code::kEgress, "cannot set {} on {}: {}", address, name, errnoText(errno));
  return {};
}

void writeSysctl(const std::string& path, const char* value) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd) (void)!write(fd.get(), value, std::strlen(value));
}

}  // namespace

Result<Fd> createGatewayTap() {
  // Static addresses on a link with one peer: no duplicate address detection
  // (it would keep the gateway's IPv6 address tentative), no router adverts.
  writeSysctl("/proc/sys/net/ipv6/conf/default/accept_dad", "0");
  writeSysctl("/proc/sys/net/ipv6/conf/default/accept_ra", "0");
  Fd tap(open("/dev/net/tun", O_RDWR | O_CLOEXEC));
  if (!tap && errno == EACCES)
    return failWith(exit_code::kEgress, "cannot open /dev/net/tun: {}; the egress firewall needs it read-write for "
                    "your user: run scripts/setup, or sudo chmod 0666 /dev/net/tun (the mode most distributions "
                    "give it)", errnoText(errno));
  if (!tap)
    return failWith(exit_code::kEgress, "cannot open /dev/net/tun: {}; the egress firewall needs the tun driver "
                    "(modprobe tun)", errnoText(errno));
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, kTapName, IFNAMSIZ - 1);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  if (ioctl(tap.get(), TUNSETIFF, &ifr) != 0)
    return failWith(exit_code::kEgress, "cannot create the tap device (TUNSETIFF): {}", errnoText(errno));
  Fd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return failWith(exit_code::kEgress, "cannot open a configuration socket: {}", errnoText(errno));
  if (auto r = interfaceUp(s.get(), "lo"); !r) return std::unexpected(r.error());
  if (auto r = addIpv4(s.get(), kTapName, kGatewayV4, kPrefixV4); !r) return std::unexpected(r.error());
  if (auto r = interfaceUp(s.get(), kTapName); !r) return std::unexpected(r.error());
  if (auto r = addIpv6(kTapName, kGatewayV6, kPrefixV6); !r) return std::unexpected(r.error());
  return tap;
}

}  // namespace airlock::egress
