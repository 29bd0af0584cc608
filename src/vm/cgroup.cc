#include "vm/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "common/paths.h"

namespace airlock::vm {
namespace {

constexpr const char* kControllers[] = {"memory", "pids"};

/// Writes `text` to the existing interface file `path`. Returns 0 or an errno.
int writeInterface(const std::string& path, const std::string& text) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  return writeAll(fd.get(), text) ? 0 : (errno ? errno : EIO);
}

/// Whether the cgroup at `dir` offers both controllers to itself
/// (its cgroup.controllers lists them).
bool offersControllers(const std::string& dir) {
  auto text = readFile(dir + "/cgroup.controllers", 4096);
  if (!text) return false;
  for (const char* wanted : kControllers) {
    std::istringstream words(*text);
    bool found = false;
    for (std::string w; words >> w;) found |= w == wanted;
    if (!found) return false;
  }
  return true;
}

}  // namespace

CgroupLimits limitsForGuest(unsigned guestMiB, uint64_t residentDiskBytes) {
  return {((static_cast<uint64_t>(guestMiB) + 2048) << 20) + residentDiskBytes, 512};
}

Result<VmCgroup> VmCgroup::create(const std::string& hierarchy, const std::string& name, const CgroupLimits& limits) {
  if (!readFile(hierarchy + "/cgroup.controllers", 4096))
    return fail("{} is not a cgroup v2 hierarchy (this host mounts cgroup v1)", hierarchy);
  const std::string parent = hierarchy + "/airlock";
  // The root's cgroup.subtree_control is systemd's (libvirt stopped writing
  // it for that reason): it must already offer both controllers.
  bool madeParent = ::mkdir(parent.c_str(), 0755) == 0;
  if (!madeParent && errno != EEXIST) return fail("cannot create the cgroup {}: {}", parent, errnoText(errno));
  auto undoParent = [&] {
    if (madeParent) ::rmdir(parent.c_str());
  };
  if (!offersControllers(parent)) {
    undoParent();
    return fail("the memory and pids controllers are not enabled for the children of {} (cgroup v1 holds them, "
                "or {}/cgroup.subtree_control lacks them)", hierarchy, hierarchy);
  }
  if (int e = writeInterface(parent + "/cgroup.subtree_control", "+memory +pids"); e != 0) {
    undoParent();
    return fail("cannot enable memory and pids for the cgroups in {}: {}", parent, errnoText(e));
  }
  // Cgroups of airlock processes that died without removing theirs
  // (vm-<pid>-...; a live airlock's may still be empty before its QEMU
  // joins). rmdir removes only a cgroup with no process and no child.
  if (auto entries = listDir(parent))
    for (const auto& entry : *entries) {
      pid_t owner = entry.starts_with("vm-") ? static_cast<pid_t>(std::atol(entry.c_str() + 3)) : 0;
      if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) ::rmdir((parent + "/" + entry).c_str());
    }
  const std::string path = parent + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0) {
    int e = errno;
    undoParent();
    return fail("cannot create the cgroup {}: {}", path, errnoText(e));
  }
  auto undo = [&](const std::string& what, int e) {
    ::rmdir(path.c_str());
    undoParent();
    return fail("cannot set {} of the cgroup {}: {}", what, path, errnoText(e));
  };
  if (int e = writeInterface(path + "/memory.max", std::to_string(limits.memoryMaxBytes)); e != 0)
    return undo("memory.max", e);
  // No swap beyond the limit either (absent without swap accounting).
  if (int e = writeInterface(path + "/memory.swap.max", "0"); e != 0 && e != ENOENT) return undo("memory.swap.max", e);
  if (int e = writeInterface(path + "/pids.max", std::to_string(limits.pidsMax)); e != 0) return undo("pids.max", e);
  Fd procs(::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs) return undo("cgroup.procs", errno);
  return VmCgroup(path, std::move(procs));
}

VmCgroup::VmCgroup(VmCgroup&& other) noexcept
    : path_(std::exchange(other.path_, std::string())), procs_(std::move(other.procs_)) {}

VmCgroup::~VmCgroup() {
  procs_.reset();
  if (path_.empty()) return;
  // Right after the last process is reaped the kernel may still count it
  // for a moment (EBUSY); a cgroup left anyway is removed by a later create().
  for (int i = 0; i < 20 && ::rmdir(path_.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(10000);
}

int joinCgroup(int procsFd) noexcept {
  return ::write(procsFd, "0", 1) == 1 ? 0 : errno;
}

}  // namespace airlock::vm
