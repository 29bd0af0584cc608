#include "egress/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/exit_codes.h"

namespace airlock::egress {

namespace {

Result<> writeProcFile(const char* path, const std::string& text) {
  Fd fd(open(path, O_WRONLY | O_CLOEXEC));
  if (!fd || !writeAll(fd.get(), text))
    return failWith(exit_code::kEgress, "cannot write {} for the user namespace: {}", path, errnoText(errno));
  return {};
}

}  // namespace

Result<> becomeNamespaceRoot() {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (uid == 0) return {};
  if (unshare(CLONE_NEWUSER) != 0)
    return failWith(exit_code::kEgress, "cannot create a user namespace for the VM's jail and network (unshare "
                    "CLONE_NEWUSER): {}; enable unprivileged user namespaces (sysctl "
                    "kernel.unprivileged_userns_clone=1 / user.max_user_namespaces) or run as root", errnoText(errno));
  if (auto r = writeProcFile("/proc/self/setgroups", "deny"); !r) return r;
  if (auto r = writeProcFile("/proc/self/uid_map", fmt::format("0 {} 1", uid)); !r) return r;
  return writeProcFile("/proc/self/gid_map", fmt::format("0 {} 1", gid));
}

Result<NetNamespace> NetNamespace::create() {
  // unshare() moves only the calling thread, so the airlock process stays in
  // the host's namespace; the new one is pinned by the fd the thread opens.
  Result<Fd> fd = fail("namespace thread did not run");
  std::thread([&] {
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
    if (setns(fd_.get(), CLONE_NEWNET) != 0) {
      result = failWith(exit_code::kEgress, "cannot enter the session network namespace: {}", errnoText(errno));
      return;
    }
    result = fn();
  }).join();
  return result;
}

}  // namespace airlock::egress
