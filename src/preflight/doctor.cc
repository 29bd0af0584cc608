#include "preflight/doctor.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <regex>
#include <tuple>

#include "common/encoding.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "common/subordinate_ids.h"
#include "common/subprocess.h"
#include "vm/boot_assets.h"
#include "vm/guest_kernel.h"
#include "vm/run_dirs.h"

namespace airlock::preflight {
namespace {

namespace fs = std::filesystem;

constexpr const char* kQemu = "qemu-system-x86_64";
constexpr const char* kVirtiofsd = "/usr/lib/qemu/virtiofsd";


/// Bytes of the regular files below `dir` (symlinks not followed).
uint64_t treeBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
    total += it->file_size(ec);
  }
  return total;
}

/// `name` on PATH; `inSetup`: scripts/setup installs `package`.
CheckResult tool(HostProbe& probe, const std::string& name, CheckStatus missing, const std::string& why,
                 const std::string& package, bool inSetup = true) {
  std::string path = probe.findOnPath(name);
  if (!path.empty()) return {name, CheckStatus::kOk, path, ""};
  return {name, missing, fmt::format("{} not found on PATH ({})", name, why),
          fmt::format("{}apt-get install {}{}", probe.effectiveUid() == 0 ? "" : "sudo ", package,
                      inSetup ? " (scripts/setup installs it)" : "")};
}

CheckResult kvm(HostProbe& probe) {
  auto choice = vm::chooseAccel(vm::AccelRequest::kAuto, probe.hostFacts(), [] { return true; });
  if (choice.accel == vm::Accel::kKvm) return {"kvm", CheckStatus::kOk, "KVM usable (/dev/kvm, VT-x/AMD-V)", ""};
  const vm::HostFacts facts = probe.hostFacts();
  const bool hardware = facts.cpuHasVirt;  // kvm_pvm or no VT-x/AMD-V: no permission fixes that
  if (hardware && facts.kvmOpenError == EACCES)
    return {"kvm", CheckStatus::kWarn, choice.warning,
            fmt::format("sudo usermod -aG kvm {0}, then log in again (no kvm group owns /dev/kvm? sudo groupadd -f "
                        "kvm; sudo chgrp kvm /dev/kvm; sudo chmod 0660 /dev/kvm)",
                        probe.userName().empty() ? std::to_string(probe.effectiveUid()) : probe.userName())};
  if (hardware && facts.kvmOpenError == EPERM)
    return {"kvm", CheckStatus::kWarn, choice.warning,
            "give /dev/kvm to the kvm group, read-write (chgrp kvm /dev/kvm; chmod 0660 /dev/kvm; distributions' "
            "udev rules do this)"};
  return {"kvm", CheckStatus::kWarn, choice.warning,
          "for KVM: enable VT-x/AMD-V (or nested virtualization) and make /dev/kvm read-write for you"};
}

std::vector<CheckResult> qemu(HostProbe& probe) {
  std::string path = probe.findOnPath(kQemu);
  std::string fix = "apt-get install qemu-system-x86 (scripts/setup installs it)";
  if (path.empty())
    return {{"qemu", CheckStatus::kFail, std::string(kQemu) + " not found on PATH", fix},
            {"microvm", CheckStatus::kFail, "cannot check without QEMU", fix}};
  std::vector<CheckResult> out;
  auto version = probe.output({path, "--version"});
  std::string number = version ? parseQemuVersion(*version) : "";
  if (number.empty())
    out.push_back({"qemu", CheckStatus::kFail,
                   fmt::format("{} --version failed: {}", path, version ? "no version in its output" : version.error().message),
                   fix});
  else
    out.push_back({"qemu", CheckStatus::kOk, fmt::format("{} (QEMU {})", path, number), ""});
  auto machines = probe.output({path, "-machine", "help"});
  if (machines && std::regex_search(*machines, std::regex(R"((^|\n)microvm\s)")))
    out.push_back({"microvm", CheckStatus::kOk, "QEMU supports -machine microvm", ""});
  else
    out.push_back({"microvm", CheckStatus::kFail, "QEMU does not list the microvm machine type",
                   "install a QEMU with microvm support (Debian's qemu-system-x86 has it)"});
  return out;
}

CheckResult kernelAssets(HostProbe& probe, const std::string& cacheDir) {
  if (auto own = vm::builtGuestKernel(cacheDir)) {
    std::string name = vm::kernelRelease(*own).value_or("");
    if (vm::guestKernelSourceChanged(*own, vm::kKernelSourceTarball))
      return {"guest kernel", CheckStatus::kWarn,
              fmt::format("airlock's own {} in {}, built from an older {}", name, *own, vm::kKernelSourceTarball),
              "rebuild it from the new source (its fixes): airlock system kernel build"};
    return {"guest kernel", CheckStatus::kOk, fmt::format("airlock's own {} in {}", name, *own), ""};
  }
  const std::string faster = fmt::format(
      "for faster boots, build airlock's own: airlock system kernel build (needs {})", vm::kKernelSourceTarball);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cacheDir + "/assets", ec)) {
    if (entry.path().filename().string().starts_with("kernel-") && fs::exists(entry.path() / "vmlinux", ec))
      return {"guest kernel", CheckStatus::kWarn,
              "Debian's cloud kernel and modules, cached in " + entry.path().string(), faster};
  }
  if (probe.findOnPath("apt-get").empty())
    return {"guest kernel", CheckStatus::kFail,
            "not built, and apt-get (which downloads Debian's cloud kernel) is missing",
            "run airlock on a Debian or Ubuntu host with apt-get"};
  return {"guest kernel", CheckStatus::kWarn,
          "Debian's cloud kernel, not cached yet; the first run builds it (~27 MB download, ~6 s)", faster};
}

/// Unprivileged user namespaces: not needed as root; otherwise QEMU's and
/// virtiofsd's jails (vm/jail.h), the session network (egress/netns.cc) and
/// mmdebstrap --mode=unshare fail without them.
CheckResult userNamespaces(HostProbe& probe) {
  if (probe.effectiveUid() == 0) return {"user namespaces", CheckStatus::kOk, "not needed (running as root)", ""};
  std::string fix = "sudo sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1";
  auto max = probe.readText("/proc/sys/user/max_user_namespaces");
  if (!max || std::atol(max->c_str()) <= 0)
    return {"user namespaces", CheckStatus::kFail, "disabled (user.max_user_namespaces is 0 or unreadable); "
            "the VM's jail, its network and the base-image build need them when not root", fix};
  auto clone = probe.readText("/proc/sys/kernel/unprivileged_userns_clone");
  if (clone && std::atol(clone->c_str()) == 0)
    return {"user namespaces", CheckStatus::kFail, "unprivileged user namespaces are disabled "
            "(kernel.unprivileged_userns_clone=0); the VM's jail, its network and the base-image build need "
            "them when not root", fix};
  // Ubuntu 23.10 and later: AppArmor lets only profiled programs create
  // user namespaces unless this sysctl is 0.
  auto apparmor = probe.readText("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  if (apparmor && std::atol(apparmor->c_str()) != 0)
    return {"user namespaces", CheckStatus::kFail,
            "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1); "
            "the VM's jail, its network and the base-image build need them when not root",
            "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (persist it in /etc/sysctl.d/)"};
  return {"user namespaces", CheckStatus::kOk, "enabled", ""};
}

/// The session network's tap device (egress/tap.cc): root may open
/// /dev/net/tun whatever its mode; a user needs it read-write.
CheckResult tunDevice(HostProbe& probe) {
  const bool root = probe.effectiveUid() == 0;
  int e = probe.accessError("/dev/net/tun", root ? F_OK : R_OK | W_OK);
  if (root && e == 0) return {"tun", CheckStatus::kOk, "/dev/net/tun (root opens it)", ""};
  if (e == 0) return {"tun", CheckStatus::kOk, "/dev/net/tun is read-write for your user", ""};
  if (e == ENOENT)
    return {"tun", CheckStatus::kFail, "/dev/net/tun is missing: no session with network can start", "sudo modprobe tun"};
  return {"tun", CheckStatus::kFail,
          fmt::format("/dev/net/tun is not read-write for your user ({}): no session with network can start",
                      errnoText(e)),
          "run scripts/setup, or: sudo chmod 0666 /dev/net/tun (the mode most distributions give it)"};
}

/// The cgroup v2 memory and pids limit of each VM's QEMU (vm/cgroup.h):
/// made when airlock runs as root on a cgroup v2 host.
CheckResult cgroupLimits(HostProbe& probe) {
  if (probe.effectiveUid() != 0)
    return {"cgroup", CheckStatus::kWarn,
            "as a user, airlock makes no cgroup: QEMU has no memory or task limit of its own",
            "to add one in a systemd user session, run the session in a scope with room for the guest's RAM plus "
            "about 3 GiB (QEMU, virtiofsd, airlock): systemd-run --user --scope -p MemoryMax=7G -p TasksMax=512 "
            "airlock run ... (for a 4 GiB guest)"};
  auto controllers = probe.readText("/sys/fs/cgroup/cgroup.controllers");
  if (!controllers)
    return {"cgroup", CheckStatus::kWarn,
            "this host mounts cgroup v1: QEMU runs without a memory and task limit of its own",
            "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2, the default since Debian 11 and Ubuntu 21.10)"};
  if (controllers->find("memory") == std::string::npos || controllers->find("pids") == std::string::npos)
    return {"cgroup", CheckStatus::kWarn,
            "cgroup v2 lacks the memory or pids controller: QEMU runs without a memory and task limit of its own",
            "boot with systemd.unified_cgroup_hierarchy=1 and without cgroup_disable= or cgroup_no_v1= for them"};
  return {"cgroup", CheckStatus::kOk,
          "cgroup v2: each VM's QEMU runs in a cgroup of its own (memory: guest RAM + 2 GiB; 512 tasks)", ""};
}

/// Root is not needed: an unprivileged airlock runs QEMU and virtiofsd in
/// user namespaces of its own (the user-namespace check says whether it can).
/// As root, both still drop to unprivileged uids.
CheckResult root(HostProbe& probe) {
  if (probe.effectiveUid() == 0)
    return {"root", CheckStatus::kOk, "running as root (QEMU and virtiofsd still run as unprivileged uids)", ""};
  return {"root", CheckStatus::kOk,
          fmt::format("running as uid {}: not needed (QEMU and virtiofsd run in user namespaces)",
                      probe.effectiveUid()),
          ""};
}

/// What mmdebstrap --mode=unshare (the base-image build as a user other than
/// root) needs: newuidmap/newgidmap and subordinate id ranges; newgidmap and
/// the gid range also let virtiofsd (-w shares, direct mode) drop a login's
/// supplementary groups (egress/user_namespace.h).
std::vector<CheckResult> unprivilegedBuild(HostProbe& probe) {
  std::vector<CheckResult> out;
  out.push_back(tool(probe, "newuidmap", CheckStatus::kFail,
                     "mmdebstrap needs it to build the base image as a user other than root", "uidmap", false));
  out.push_back(tool(probe, "newgidmap", CheckStatus::kFail,
                     "mmdebstrap needs it to build the base image as a user other than root, and virtiofsd (-w "
                     "shares, direct mode) to drop your supplementary groups",
                     "uidmap", false));
  std::string user = probe.userName();
  std::string who = user.empty() ? std::to_string(probe.effectiveUid()) : user;
  const std::string subuid = probe.readText("/etc/subuid").value_or(""), subgid = probe.readText("/etc/subgid").value_or("");
  const uint64_t free = firstFreeSubordinateId({&subuid, &subgid});
  constexpr const char* kGroupsToo = ", and virtiofsd (-w shares, direct mode) cannot drop your supplementary groups";
  for (const auto& [name, file, text, flag, alsoBroken] :
       {std::tuple{"subuid", "/etc/subuid", &subuid, "--add-subuids", ""},
        std::tuple{"subgid", "/etc/subgid", &subgid, "--add-subgids", kGroupsToo}}) {
    if (findSubordinateRange(*text, user, probe.effectiveUid(), 65536)) {
      out.push_back({name, CheckStatus::kOk, fmt::format("{} has a range in {}", who, file), ""});
      continue;
    }
    out.push_back({name, CheckStatus::kFail,
                   fmt::format("{} has no range of 65536 ids in {}; mmdebstrap cannot build the base image as a user "
                               "other than root{}",
                               who, file, alsoBroken),
                   fmt::format("sudo usermod {} {}-{} {} (a range no other user has; scripts/setup picks it too)",
                               flag, free, free + 65535, who)});
  }
  return out;
}

CheckResult disk(HostProbe& probe, const std::string& what, const std::string& dir, const DoctorLimits& limits) {
  std::string name = "disk (" + what + ")";
  auto free = probe.freeBytes(dir);
  if (!free) return {name, CheckStatus::kWarn, "cannot tell free space of " + dir + ": " + free.error().message, ""};
  std::string detail = fmt::format("{} free for {}", formatBytes(*free), dir);
  std::string fix = fmt::format("free space on the filesystem of {}", dir);
  if (*free < limits.failFreeBytes) return {name, CheckStatus::kFail, detail + " (airlock needs at least 1 GiB)", fix};
  if (*free < limits.warnFreeBytes) return {name, CheckStatus::kWarn, detail + " (images and snapshots need more)", fix};
  return {name, CheckStatus::kOk, detail, ""};
}

CheckResult staleSessions(const std::string& stateDir) {
  // A session is in use while its owner holds its run lock, or a review of
  // it holds the review lock (session/layout.h: session.lock, review.lock).
  std::vector<std::string> stale;
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(stateDir + "/sessions", ec)) {
    const std::string dir = entry.path().string();
    if (!fs::is_directory(entry.path() / "snapshot", ec)) continue;
    if (lockHeld(dir + "/session.lock") || lockHeld(dir + "/review.lock")) continue;
    stale.push_back(dir);
    bytes += treeBytes((entry.path() / "snapshot").string());
  }
  if (stale.empty()) return {"stale sessions", CheckStatus::kOk, "none", ""};
  return {"stale sessions", CheckStatus::kWarn,
          fmt::format("{} ended session(s) still hold a snapshot ({}), e.g. {}", stale.size(), formatBytes(bytes), stale[0]),
          "airlock system prune --dry-run to see what would go (snapshots of sessions that are not running, finished "
          "sessions without pending changes, the rootfs cache), then airlock system prune"};
}

CheckResult staleJournals(const std::string& stateDir) {
  std::vector<std::string> stale;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(stateDir + "/flush", ec)) {
    std::string path = entry.path().string();
    if (path.ends_with(".lock") || lockHeld(path + ".lock")) continue;
    stale.push_back(path);
  }
  if (stale.empty()) return {"flush journals", CheckStatus::kOk, "no interrupted flush", ""};
  return {"flush journals", CheckStatus::kWarn,
          fmt::format("{} interrupted flush(es), e.g. {}", stale.size(), stale[0]),
          "the next `airlock run` or `airlock review` in that workspace completes it (or: airlock review "
          "--on-interrupted=rollback)"};
}

/// What ended VMs left in the run directories (a crash of airlock and its
/// janitor, a reboot): swept here as by the next launch, a kept scratch disk
/// moved to its session first.
CheckResult staleVmRuns(const std::string& stateDir) {
  const std::string vms = stateDir + "/vms";
  size_t removed = vm::sweepStaleRunDirs(vms, stateDir + "/sessions");
  size_t running = 0;
  for (const auto& name : listDir(vms).value_or(std::vector<std::string>{})) running += name.starts_with("vm-");
  std::string detail = removed == 0 ? "nothing left by ended VMs"
                                    : fmt::format("removed {} run director{} that ended VMs left (a crash or a reboot)",
                                                  removed, removed == 1 ? "y" : "ies");
  return {"VM run dirs", CheckStatus::kOk, fmt::format("{}; {} VM(s) running", detail, running), ""};
}

CheckResult imageCache(const std::string& cacheDir, const DoctorLimits& limits) {
  uint64_t bytes = treeBytes(cacheDir + "/images") + treeBytes(cacheDir + "/rootfs");
  std::string detail = fmt::format("{} in {}/images and {}/rootfs", formatBytes(bytes), cacheDir, cacheDir);
  if (bytes > limits.warnImageCacheBytes)
    return {"image cache", CheckStatus::kWarn, detail,
            fmt::format("remove images you no longer use from {}/images (they are rebuilt on demand)", cacheDir)};
  return {"image cache", CheckStatus::kOk, detail, ""};
}

}  // namespace

vm::HostFacts SystemHostProbe::hostFacts() {
  // As root, QEMU runs as an unprivileged uid: what counts is what that uid can open.
  return ::geteuid() == 0 ? vm::forJailedQemu(vm::probeHost()) : vm::probeHost();
}

std::string SystemHostProbe::findOnPath(const std::string& name) { return findProgram(name); }

bool SystemHostProbe::isExecutable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

Result<std::string> SystemHostProbe::output(const std::vector<std::string>& argv) { return runChecked(argv); }

std::optional<std::string> SystemHostProbe::readText(const std::string& path) {
  auto text = readFile(path, 4096);
  if (!text) return std::nullopt;
  return *text;
}

uid_t SystemHostProbe::effectiveUid() { return ::geteuid(); }

int SystemHostProbe::accessError(const std::string& path, int mode) {
  return ::access(path.c_str(), mode) == 0 ? 0 : errno;
}

std::string SystemHostProbe::userName() {
  passwd* pw = ::getpwuid(::geteuid());
  return pw && pw->pw_name ? pw->pw_name : "";
}

Result<uint64_t> SystemHostProbe::freeBytes(const std::string& path) {
  fs::path at = path;
  std::error_code ec;
  while (!at.empty() && !fs::exists(at, ec) && at != at.root_path()) at = at.parent_path();
  struct statvfs st {};
  if (::statvfs(at.c_str(), &st) != 0) return fail("statvfs {}: {}", at.string(), errnoText(errno));
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

const char* statusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk: return "ok";
    case CheckStatus::kWarn: return "warn";
    case CheckStatus::kFail: return "fail";
  }
  return "?";
}

std::string parseQemuVersion(const std::string& versionOutput) {
  std::smatch m;
  if (std::regex_search(versionOutput, m, std::regex(R"(QEMU emulator version ([0-9]+\.[0-9]+(\.[0-9]+)?))")))
    return m[1];
  return "";
}

std::vector<CheckResult> runDoctor(HostProbe& probe, const std::string& cacheDir, const std::string& stateDir,
                                   const DoctorLimits& limits) {
  std::vector<CheckResult> out;
  out.push_back(kvm(probe));
  for (auto& r : qemu(probe)) out.push_back(std::move(r));
  if (probe.isExecutable(kVirtiofsd))
    out.push_back({"virtiofsd", CheckStatus::kOk, kVirtiofsd, ""});
  else
    out.push_back({"virtiofsd", CheckStatus::kFail, std::string(kVirtiofsd) + " is missing",
                   "apt-get install qemu-system-common (scripts/setup installs it)"});
  out.push_back(root(probe));
  out.push_back(kernelAssets(probe, cacheDir));
  out.push_back(tool(probe, "mkfs.erofs", CheckStatus::kFail, "builds the read-only root images", "erofs-utils"));
  out.push_back(tool(probe, "mkfs.ext4", CheckStatus::kFail, "formats the scratch disk", "e2fsprogs"));
  out.push_back(tool(probe, "mmdebstrap", CheckStatus::kFail, "builds the agents' base image", "mmdebstrap"));
  if (probe.effectiveUid() != 0)
    for (auto& r : unprivilegedBuild(probe)) out.push_back(std::move(r));
  out.push_back(userNamespaces(probe));
  out.push_back(tunDevice(probe));
  out.push_back(cgroupLimits(probe));
  out.push_back(disk(probe, "cache", cacheDir, limits));
  out.push_back(disk(probe, "state", stateDir, limits));
  out.push_back(staleSessions(stateDir));
  out.push_back(staleJournals(stateDir));
  out.push_back(staleVmRuns(stateDir));
  out.push_back(imageCache(cacheDir, limits));
  return out;
}

}  // namespace airlock::preflight
