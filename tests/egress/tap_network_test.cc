// The session network end to end: a VM whose only link is the tap in its
// private namespace. The test stops airlock's egress proxy and stands in for
// it (a listener on the proxy port inside the namespace) to check what the
// firewall lets through, where it goes, and what it drops and counts.

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "common/fd.h"
#include "egress/addresses.h"
#include "guest_machine.h"
#include "wire_bytes.h"
#include "vm/machine.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

/// Accepts connections on the proxy port in the session namespace and
/// records each one's original destination ("198.51.100.7:80", "[2001:db8::7]:8080").
class FakeProxy {
 public:
  explicit FakeProxy(const egress::NetNamespace& netns) {
    auto r = netns.run([&]() -> Result<> {
      listener_.reset(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
      int zero = 0, one = 1;
      setsockopt(listener_.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in6 addr{};
      addr.sin6_family = AF_INET6;
      addr.sin6_port = htons(egress::kProxyPort);
      if (bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
          listen(listener_.get(), 16) != 0)
        return fail("cannot listen on the proxy port: {}", errnoText(errno));
      return {};
    });
    EXPECT_TRUE(r) << r.error().message;
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeProxy() {
    shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  std::vector<std::string> destinations() {
    std::lock_guard lock(mutex_);
    return destinations_;
  }

 private:
  void serve() {
    for (;;) {
      Fd conn(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) return;
      std::string dest = originalDestination(conn.get());
      {
        std::lock_guard lock(mutex_);
        destinations_.push_back(dest);
      }
      char buf[4096];
      (void)!read(conn.get(), buf, sizeof buf);
      writeAll(conn.get(), "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n");
    }
  }
  static std::string originalDestination(int fd) {
    sockaddr_in6 local{};
    socklen_t len = sizeof local;
    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    char text[INET6_ADDRSTRLEN] = "";
    if (IN6_IS_ADDR_V4MAPPED(&local.sin6_addr)) {
      sockaddr_in dst{};
      len = sizeof dst;
      if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) != 0) return "?";
      inet_ntop(AF_INET, &dst.sin_addr, text, sizeof text);
      return std::string(text) + ":" + std::to_string(ntohs(dst.sin_port));
    }
    sockaddr_in6 dst{};
    len = sizeof dst;
    if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len) != 0) return "?";
    inet_ntop(AF_INET6, &dst.sin6_addr, text, sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(dst.sin6_port));
  }
  Fd listener_;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> destinations_;
};

class TapNetworkTest : public MachineFixture {
 protected:
  void configure(vm::LaunchOptions& options) override {
    egress::Policy policy;
    policy.profile = egress::Profile::kLocked;
    options.egress = policy;
    options.egressNetwork.resolver = egress::IpAddress::parse("192.0.2.53");
  }
  void SetUp() override {
    MachineFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_NE(machine_->network(), nullptr);
  }
  /// A guest shell command fetching http://HOST:PORT/ with busybox nc (busybox
  /// wget crashes in the static build).
  static std::string httpGet(const std::string& host, int port) {
    return "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 " + host + " " + std::to_string(port);
  }
  uint64_t counter(const std::string& name) {
    auto counters = machine_->network()->dropCounters();
    EXPECT_TRUE(counters) << counters.error().message;
    return counters ? (*counters)[name] : 0;
  }
};

TEST_F(TapNetworkTest, GuestHasBothAddressFamiliesAndTheGatewayResolver) {
  auto [code, out] = sh("ip addr show eth0; ip -6 route; cat /etc/resolv.conf");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("10.0.2.15/24"), std::string::npos) << out;
  EXPECT_NE(out.find("fd00:a1::15/64"), std::string::npos) << out;
  EXPECT_NE(out.find("default via fd00:a1::1"), std::string::npos) << out;
  EXPECT_NE(out.find("nameserver 10.0.2.2"), std::string::npos) << out;
}

TEST_F(TapNetworkTest, EveryTcpConnectionReachesTheProxyWithItsOriginalDestination) {
  machine_->network()->stopEgressProxy();
  FakeProxy proxy(machine_->network()->netns());
  auto [code4, out4] = sh(httpGet("198.51.100.7", 80));
  EXPECT_EQ(code4, 0) << out4;
  EXPECT_NE(out4.find("hello"), std::string::npos) << out4;
  auto [code6, out6] = sh(httpGet("2001:db8::7", 8080));
  EXPECT_EQ(code6, 0) << out6;
  EXPECT_NE(out6.find("hello"), std::string::npos) << out6;
  auto dests = proxy.destinations();
  ASSERT_EQ(dests.size(), 2u);
  EXPECT_EQ(dests[0], "198.51.100.7:80");
  EXPECT_EQ(dests[1], "[2001:db8::7]:8080");
}

TEST_F(TapNetworkTest, MetadataIcmpAndUdpAreDroppedAndCounted) {
  machine_->network()->stopEgressProxy();
  FakeProxy proxy(machine_->network()->netns());
  auto [metaCode, metaOut] = sh(httpGet("169.254.169.254", 80));
  EXPECT_NE(metaCode, 0) << metaOut;
  auto [meta6Code, meta6Out] = sh(httpGet("fd00:ec2::254", 80));
  EXPECT_NE(meta6Code, 0) << meta6Out;
  EXPECT_GE(counter("drop_metadata"), 2u);
  auto [pingCode, pingOut] = sh("ping -c 1 -W 2 198.51.100.7; ping -c 1 -W 2 10.0.2.2");
  EXPECT_NE(pingCode, 0) << pingOut;
  EXPECT_GE(counter("drop_icmp"), 2u);
  sh("nslookup -timeout=1 -retry=1 -port=5353 example.com 10.0.2.2; nslookup -timeout=1 -retry=1 example.com 198.51.100.7");
  EXPECT_GE(counter("drop_udp"), 2u);
  // The allowed path still works after the drops.
  auto [code, out] = sh(httpGet("198.51.100.7", 80));
  EXPECT_EQ(code, 0) << out;
  auto dests = proxy.destinations();
  ASSERT_EQ(dests.size(), 1u);
  EXPECT_EQ(dests[0], "198.51.100.7:80");
}

// A DNS answer that comes after the guest's resolver gave up gets an ICMP
// port unreachable back: dropped, but housekeeping, not an egress attempt
// the session's blocked summary reports.
TEST_F(TapNetworkTest, TheGuestsIcmpErrorsToTheGatewayAreNotReportedAsBlocked) {
  const uint64_t before = counter("drop_icmp");
  auto sent = machine_->network()->netns().run([]() -> Result<> {
    for (bool v6 : {false, true}) {
      Fd s(socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      sockaddr_storage to{};
      socklen_t len;
      if (v6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&to);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(9);  // nothing listens there in the guest
        inet_pton(AF_INET6, "fd00:a1::15", &a->sin6_addr);
        len = sizeof *a;
      } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&to);
        a->sin_family = AF_INET;
        a->sin_port = htons(9);
        inet_pton(AF_INET, "10.0.2.15", &a->sin_addr);
        len = sizeof *a;
      }
      if (sendto(s.get(), "late", 4, 0, reinterpret_cast<sockaddr*>(&to), len) != 4)
        return fail("cannot send to the guest: {}", errnoText(errno));
    }
    return {};
  });
  ASSERT_TRUE(sent) << sent.error().message;
  uint64_t housekeeping = 0;
  for (int i = 0; i < 50 && housekeeping < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    housekeeping = counter("guest_icmp_errors");
  }
  EXPECT_GE(housekeeping, 2u) << "the guest's port unreachables (IPv4 and IPv6) did not reach the rule";
  EXPECT_EQ(counter("drop_icmp"), before);
  for (const auto& line : machine_->blockedEgress())
    EXPECT_EQ(line.find("icmp"), std::string::npos) << line;
}

TEST_F(TapNetworkTest, TcpPort53GoesToTheDnsProxyOnlyOnTheGateway) {
  machine_->network()->stopEgressProxy();
  FakeProxy proxy(machine_->network()->netns());
  // A name not on the (empty) allowlist: answered NXDOMAIN by the DNS proxy itself.
  std::string query = printfEscaped(framedDnsQuery(0x4321, "denied.example.net", 1));
  auto hex = [&](const std::string& address) {
    return sh("printf '" + query + "' | nc -w 5 " + address + " 53 | hexdump -v -e '1/1 \"%02x\"'").output;
  };
  // The gateway (IPv4 and IPv6) answers DNS over TCP: length, id 4321, flags 8183 (NXDOMAIN).
  EXPECT_EQ(hex("10.0.2.2").find("43218183"), 4u);
  EXPECT_EQ(hex("fd00:a1::1").find("43218183"), 4u);
  // Port 53 anywhere else is an ordinary TCP connection for the egress proxy.
  sh("printf '" + query + "' | nc -w 5 198.51.100.7 53; printf '" + query + "' | nc -w 5 2001:db8::7 53");
  EXPECT_EQ(proxy.destinations(), (std::vector<std::string>{"198.51.100.7:53", "[2001:db8::7]:53"}));
  auto blocked = machine_->network()->blocked();
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked[0].what, "denied.example.net A");
  EXPECT_EQ(blocked[0].count, 2u);
}

}  // namespace
}  // namespace airlock::test
