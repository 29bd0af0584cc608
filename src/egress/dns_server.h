#pragma once
// The DNS proxy's sockets: UDP and TCP port 53 on the gateway addresses
// inside the session namespace, answered through one DnsAnswerer. UDP is
// served by one thread (which also accepts TCP); each TCP connection gets a
// thread of its own (RFC 7766 framing, pipelined queries, idle timeout), at
// most kMaxTcpClients at once.

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/fd.h"
#include "egress/blocked_log.h"
#include "egress/dns_answerer.h"
#include "egress/netns.h"

namespace airlock::egress {

/// One line per event for the egress log.
using EgressLogFn = std::function<void(const std::string&)>;

class DnsServer {
 public:
  /// Concurrent DNS-over-TCP connections; more are closed at once.
  static constexpr int kMaxTcpClients = 16;
  /// A TCP connection with no complete query for this long is closed.
  static constexpr int kTcpIdleTimeoutMs = 10000;

  /// Binds kGatewayV4:53 and [kGatewayV6]:53 (UDP and TCP) in `netns` and
  /// starts serving. `answerer` and `log` must outlive the server; refusals
  /// are added to `blocked` (may be null). Errors carry kEgress.
  static Result<std::unique_ptr<DnsServer>> start(const NetNamespace& netns, DnsAnswerer& answerer, EgressLogFn log,
                                                   std::shared_ptr<BlockedLog> blocked = nullptr);
  /// Stops serving; waits for the TCP connection threads.
  ~DnsServer();
  DnsServer(const DnsServer&) = delete;
  DnsServer& operator=(const DnsServer&) = delete;

 private:
  DnsServer(DnsAnswerer& answerer, EgressLogFn log, std::shared_ptr<BlockedLog> blocked)
      : answerer_(answerer), log_(std::move(log)), blocked_(std::move(blocked)) {}
  void serve();
  void serveTcp(Fd conn);
  /// Answers one query and reports it to the log and the blocked summary.
  std::string answer(std::string_view query, const char* transport);
  DnsAnswerer& answerer_;
  EgressLogFn log_;
  std::shared_ptr<BlockedLog> blocked_;
  Fd v4_, v6_, tcp4_, tcp6_, stopRead_, stopWrite_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable idle_;
  int tcpClients_ = 0;
};

}  // namespace airlock::egress
