#include "egress/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/thread_signals.h"
#include "common/exit_codes.h"

namespace airlock::egress {

Result<NetNamespace> NetNamespace::create() {
  // unshare() moves only the calling thread, so the airlock process stays in
  // the host's namespace; the new one is pinned by the fd the thread opens.
  Result<Fd> fd = fail("namespace thread did not run");
  std::thread([&] {
    blockSignalsInThisThread();
    if (unshare(CLONE_NEWNET) != 0) {
      fd = failWith(exit_code::kEgress, "cannot create a network namespace (unshare CLONE_NEWNET): {}; run as "
                    "root or enable unprivileged user namespaces", errnoText(errno));
      return;
    }
    Fd ns(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!ns)
      fd = failWith(exit_code::kEgress, "cannot open the new network namespace: {}", errnoText(errno));
    else
      fd = std::move(ns);
  }).join();
  if (!fd) return std::unexpected(fd.error());
  return NetNamespace(std::move(*fd));
}

Result<> NetNamespace::run(const std::function<Result<>()>& fn) const {
  Result<> result;
  std::thread([&] {
    blockSignalsInThisThread();
    if (setns(fd_.get(), CLONE_NEWNET) != 0) {
      result = failWith(exit_code::kEgress, "cannot enter the session network namespace: {}", errnoText(errno));
      return;
    }
    result = fn();
  }).join();
  return result;
}

}  // namespace airlock::egress
