// Runs inside a test VM, as root, whose kernel has cgroup v2 with every
// controller (this machine kind's host has cgroup v1): makes a VmCgroup the
// way QemuVm does, starts a shell in it the way QEMU is started (spawnTied,
// joinCgroup before exec, own PID namespace) that tries to exceed both
// limits, and prints what the kernel reported, one "key: value" per line.

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/fd.h"
#include "common/subprocess.h"
#include "vm/cgroup.h"

using namespace airlock;

namespace {

std::string read(const std::string& path) {
  auto text = readFile(path, 1 << 16);
  return text ? *text : "(unreadable)";
}

}  // namespace

int main() {
  ::mkdir("/tmp", 01777);
  if (::mount("none", "/sys/fs/cgroup", "cgroup2", 0, nullptr) != 0 && errno != EBUSY) {
    std::printf("mount: %s\n", std::strerror(errno));
    return 1;
  }
  // What systemd does on a host: the root offers memory and pids to its
  // children (airlock never writes the root's subtree_control).
  {
    Fd control(::open("/sys/fs/cgroup/cgroup.subtree_control", O_WRONLY | O_CLOEXEC));
    if (!control || !writeAll(control.get(), "+memory +pids")) {
      std::printf("subtree_control: %s\n", std::strerror(errno));
      return 1;
    }
  }
  // Left behind by a dead airlock, and by this live one before its QEMU joined.
  auto first = vm::VmCgroup::create("/sys/fs/cgroup", "vm-probe-first", {48ull << 20, 16});
  if (!first) {
    std::printf("create: %s\n", first.error().message.c_str());
    return 1;
  }
  const std::string stale = "/sys/fs/cgroup/airlock/vm-4194303-killed", live =
      "/sys/fs/cgroup/airlock/vm-" + std::to_string(::getpid()) + "-starting";
  if (::mkdir(stale.c_str(), 0755) != 0 || ::mkdir(live.c_str(), 0755) != 0) {
    std::printf("mkdir: %s\n", std::strerror(errno));
    return 1;
  }
  auto cgroup = vm::VmCgroup::create("/sys/fs/cgroup", "vm-probe", {48ull << 20, 16});
  if (!cgroup) {
    std::printf("create: %s\n", cgroup.error().message.c_str());
    return 1;
  }
  struct stat st {};
  std::printf("dead airlock's: %s\n", ::stat(stale.c_str(), &st) != 0 ? "removed" : "kept");
  std::printf("live airlock's: %s\n", ::stat(live.c_str(), &st) == 0 ? "kept" : "removed");
  ::rmdir(live.c_str());
  const std::string dir = cgroup->path();
  std::printf("path: %s\n", dir.c_str());
  std::printf("memory.max: %s", read(dir + "/memory.max").c_str());
  std::printf("pids.max: %s", read(dir + "/pids.max").c_str());
  std::printf("memory.swap.max: %s", read(dir + "/memory.swap.max").c_str());
  SpawnOptions options;
  options.stdoutPath = "/tmp/probe.out";
  options.stderrPath = "/tmp/probe.out";
  options.newPidNamespace = true;
  options.beforeExec = [fd = cgroup->procsFd()] { return vm::joinCgroup(fd); };
  auto pid = spawnTied({"/bin/sh", "-c",
                        "echo \"own: $(cat /proc/self/cgroup)\"; "
                        "dd if=/dev/zero of=/dev/null bs=96M count=1 2>/dev/null && echo 'big: allocated'; "
                        "i=0; while [ $i -lt 40 ]; do sleep 30 & i=$((i+1)); done 2>/dev/null; exit 0"},
                       options);
  if (!pid) {
    std::printf("spawn: %s\n", pid.error().message.c_str());
    return 1;
  }
  int status = 0;
  ::waitpid(*pid, &status, 0);
  std::printf("%s", read("/tmp/probe.out").c_str());
  std::printf("pids.events: %s", read(dir + "/pids.events").c_str());
  std::printf("memory.events: %s", read(dir + "/memory.events").c_str());
  {
    vm::VmCgroup gone = std::move(*cgroup);
  }
  std::printf("removed: %s\n", ::stat(dir.c_str(), &st) != 0 ? "yes" : "no");
  return 0;
}
