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
#include "vm/launcher.h"
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

class TapNetworkTest : public testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_VMS();
    state_ = freshStateDir();
    vm::LaunchOptions options;
    options.rootfsDir = testRootfs();
    auto policy = egress::buildPolicy(egress::Profile::kLocked, {}, {}, {}, {});
    ASSERT_TRUE(policy);
    options.egress = *policy;
    options.egressNetwork.resolver = egress::IpAddress::parse("192.0.2.53");
    auto machine = vm::Machine::launch(options);
    ASSERT_TRUE(machine) << machine.error().message;
    machine_ = std::move(*machine);
    ASSERT_NE(machine_->network(), nullptr);
  }
  void TearDown() override {
    if (machine_) machine_->stop();
    if (!state_.empty()) {
      EXPECT_EQ(leftoverRunDirs(state_), "");
    }
  }
  /// A guest shell command fetching http://HOST:PORT/ with busybox nc (busybox
  /// wget crashes in the static build).
  static std::string httpGet(const std::string& host, int port) {
    return "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 " + host + " " + std::to_string(port);
  }

  /// Runs a shell script in the guest; returns exit code and stdout+stderr.
  std::pair<int, std::string> sh(const std::string& script) {
    protocol::ExecRequest r;
    r.argv = {"sh", "-c", script};
    r.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    auto output = std::make_shared<std::string>();
    auto mutex = std::make_shared<std::mutex>();
    vm::OutputHandlers handlers;
    handlers.onStdout = handlers.onStderr = [output, mutex](std::string_view d) {
      std::lock_guard lock(*mutex);
      output->append(d);
    };
    auto cmd = machine_->vm().control().exec(r, handlers);
    if (!cmd) return {-1, cmd.error().message};
    auto status = (*cmd)->wait();
    if (!status) return {-1, status.error().message};
    std::lock_guard lock(*mutex);
    return {status->shellCode(), *output};
  }
  uint64_t counter(const std::string& name) {
    auto counters = machine_->network()->dropCounters();
    EXPECT_TRUE(counters) << counters.error().message;
    return counters ? (*counters)[name] : 0;
  }
  std::string state_;
  std::unique_ptr<vm::Machine> machine_;
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

}  // namespace
}  // namespace airlock::test
