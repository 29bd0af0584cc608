#pragma once
// A private network namespace owned by an fd: created without touching the
// host's network (no veth, no routes, no firewall rules on the host), gone
// when the fd and every socket/tap opened inside it are closed.

#include <fcntl.h>

#include <functional>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::egress {

class NetNamespace {
 public:
  /// Creates a fresh network namespace (needs CAP_SYS_ADMIN; errors carry
  /// exit code kEgress and name what is missing).
  static Result<NetNamespace> create();

  /// Runs `fn` on a helper thread that has joined this namespace, and waits
  /// for it: sockets, taps and netlink handles `fn` opens belong to the
  /// namespace and stay there when used from any other thread.
  Result<> run(const std::function<Result<>()>& fn) const;

  /// Another handle on the same namespace (a dup of the fd), for threads
  /// that may outlive this one.
  NetNamespace duplicate() const { return NetNamespace(Fd(fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0))); }

  /// The namespace fd (/proc/<tid>/ns/net), e.g. for setns(2) in a child.
  int fd() const { return fd_.get(); }

 private:
  explicit NetNamespace(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace airlock::egress
