#include "guest/boot.h"

#include <dirent.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "egress/addresses.h"
#include "vm/guest_contract.h"

namespace airlock::guest {
namespace {

std::string errText(const std::string& what) { return what + ": " + std::strerror(errno); }

bool mkdirs(const std::string& path, mode_t mode = 0755) {
  std::string built;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    built += "/" + part;
    if (mkdir(built.c_str(), mode) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string readSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

/// Finds /dev/vdX whose virtio-blk serial is `serial`, polling while the
/// devices are still being probed (up to ~10 s).
std::string findDiskBySerial(const std::string& serial) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (DIR* d = opendir("/sys/block")) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.rfind("vd", 0) != 0) continue;
        if (readSmallFile("/sys/block/" + name + "/serial") == serial) {
          closedir(d);
          return "/dev/" + name;
        }
      }
      closedir(d);
    }
    usleep(10000);
  }
  return "";
}

bool moveMount(const std::string& from, const std::string& to, std::string& error) {
  if (!mkdirs(to)) {
    error = errText("cannot create " + to);
    return false;
  }
  if (mount(from.c_str(), to.c_str(), nullptr, MS_MOVE, nullptr) != 0) {
    error = errText("cannot move mount " + from + " to " + to);
    return false;
  }
  return true;
}

bool mountAt(const char* source, const std::string& target, const char* type, unsigned long flags, const char* data,
             std::string& error) {
  if (!mkdirs(target)) {
    error = errText("cannot create " + target);
    return false;
  }
  if (mount(source, target.c_str(), type, flags, data) != 0) {
    error = errText(std::string("cannot mount ") + type + " at " + target);
    return false;
  }
  return true;
}

}  // namespace

void logLine(const std::string& line) {
  int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  std::string msg = "airlock-init: " + line + "\n";
  if (fd >= 0) {
    (void)!write(fd, msg.data(), msg.size());
    close(fd);
  } else {
    (void)!write(2, msg.data(), msg.size());
  }
}

BootConfig parseCmdline(const std::string& cmdline) {
  BootConfig config;
  std::stringstream ss(cmdline);
  std::string word;
  while (ss >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "airlock.root") {
      config.rootSerial = value;
    } else if (key == "airlock.scratch") {
      config.scratchSerial = value;
    } else if (key == "airlock.workspace") {
      config.workspaceSerial = value;
    } else if (key == "airlock.net") {
      config.net = value == "tap" ? NetMode::kTap : NetMode::kNone;
    } else if (key == "airlock.probe") {
      config.probe = value == "1";
      config.probeAfterModules = value == "modules";
    } else if (key == "airlock.ssh_agent") {
      config.sshAgent = value == "1";
    } else if (key == "airlock.share") {
      auto c1 = value.find(':');
      auto c2 = value.rfind(':');
      if (c1 == std::string::npos || c2 == c1) continue;
      ShareMount share{value.substr(0, c1), value.substr(c1 + 1, c2 - c1 - 1), value.substr(c2 + 1) != "rw"};
      if (share.tag.empty() || share.path.empty() || share.path[0] != '/') continue;
      config.shares.push_back(share);
    }
  }
  return config;
}

bool mountEarly(std::string& error) {
  return mountAt("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755", error) &&
         mountAt("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, error) &&
         mountAt("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, error);
}

bool loadModules(const BootConfig& config, std::string& error) {
  // Under TCG every module costs tens of milliseconds: load only what this
  // boot uses (networking and virtio-fs are optional).
  bool wantNet = config.net != NetMode::kNone;
  bool wantFs = !config.shares.empty();
  std::ifstream order("/lib/modules/load-order");
  std::string name;
  while (std::getline(order, name)) {
    if (name.empty()) continue;
    if (!wantNet && (name == "virtio_net.ko" || name == "net_failover.ko" || name == "failover.ko")) continue;
    if (!wantFs && (name == "virtiofs.ko" || name == "fuse.ko")) continue;
    std::string path = "/lib/modules/" + name;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = errText("cannot open module " + path);
      return false;
    }
    long rc = syscall(SYS_finit_module, fd, "", 0);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EEXIST) {
      errno = e;
      error = errText("cannot load module " + name);
      return false;
    }
  }
  return true;
}

bool switchToOverlayRoot(const BootConfig& config, std::string& error) {
  std::string rootDisk = findDiskBySerial(config.rootSerial);
  if (rootDisk.empty()) {
    error = "no virtio-blk disk with serial '" + config.rootSerial + "' (the root image) appeared";
    return false;
  }
  std::string scratchDisk = findDiskBySerial(config.scratchSerial);
  if (scratchDisk.empty()) {
    error = "no virtio-blk disk with serial '" + config.scratchSerial + "' (the scratch disk) appeared";
    return false;
  }
  // Found before /sys moves into the new root.
  std::string workspaceDisk;
  if (!config.workspaceSerial.empty() && (workspaceDisk = findDiskBySerial(config.workspaceSerial)).empty()) {
    error = "no virtio-blk disk with serial '" + config.workspaceSerial + "' (the workspace snapshot) appeared";
    return false;
  }
  if (!mountAt(rootDisk.c_str(), "/mnt/lower", "erofs", MS_RDONLY, nullptr, error) ||
      !mountAt(scratchDisk.c_str(), "/mnt/scratch", "ext4", MS_NOSUID | MS_NODEV, nullptr, error))
    return false;
  if (!mkdirs("/mnt/scratch/root/upper") || !mkdirs("/mnt/scratch/root/work")) {
    error = errText("cannot prepare the overlay directories on the scratch disk");
    return false;
  }
  if (!mountAt("overlay", "/newroot", "overlay", 0,
               "lowerdir=/mnt/lower,upperdir=/mnt/scratch/root/upper,workdir=/mnt/scratch/root/work", error))
    return false;
  if (!moveMount("/dev", "/newroot/dev", error) || !moveMount("/proc", "/newroot/proc", error) ||
      !moveMount("/sys", "/newroot/sys", error) ||
      !mountAt("devpts", "/newroot/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "ptmxmode=0666,mode=0620,gid=5",
               error) ||
      !mountAt("tmpfs", "/newroot/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", error) ||
      !mountAt("tmpfs", "/newroot/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", error) ||
      !mountAt("tmpfs", "/newroot/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", error) ||
      !moveMount("/mnt/scratch", "/newroot/run/airlock/scratch", error))
    return false;
  if (!config.workspaceSerial.empty()) {
    // /workspace = overlay(lower: the snapshot's erofs image, read-only;
    // upper: the scratch disk). Copy-up semantics only (no redirect_dir,
    // metacopy or index), so the upper layer alone is the complete change set.
    // /dev lives in the new root by now.
    if (!mountAt(("/newroot" + workspaceDisk).c_str(), "/newroot/run/airlock/workspace-lower", "erofs",
                 MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr, error))
      return false;
    if (!mkdirs("/newroot/run/airlock/scratch/workspace/upper") ||
        !mkdirs("/newroot/run/airlock/scratch/workspace/work")) {
      error = errText("cannot prepare the workspace overlay on the scratch disk");
      return false;
    }
    // The overlay's root takes its owner and mode from the upper directory:
    // give it the snapshot root's, so the agent may create files at the top.
    struct stat lowerRoot {};
    if (stat("/newroot/run/airlock/workspace-lower", &lowerRoot) != 0 ||
        chown("/newroot/run/airlock/scratch/workspace/upper", lowerRoot.st_uid, lowerRoot.st_gid) != 0 ||
        chmod("/newroot/run/airlock/scratch/workspace/upper", lowerRoot.st_mode & 07777) != 0) {
      error = errText("cannot set up the workspace overlay's upper directory");
      return false;
    }
    if (!mountAt("overlay", "/newroot/workspace", "overlay", MS_NOSUID | MS_NODEV,
                 "lowerdir=/newroot/run/airlock/workspace-lower,upperdir=/newroot/run/airlock/scratch/workspace/upper,"
                 "workdir=/newroot/run/airlock/scratch/workspace/work,redirect_dir=off,metacopy=off,index=off,xino=off",
                 error))
      return false;
  }
  for (const auto& share : config.shares) {
    unsigned long flags = MS_NOSUID | MS_NODEV | (share.readOnly ? MS_RDONLY : 0);
    if (!mountAt(share.tag.c_str(), "/newroot" + share.path, "virtiofs", flags, nullptr, error)) return false;
  }
  if (chdir("/newroot") != 0 || mount(".", "/", nullptr, MS_MOVE, nullptr) != 0 || chroot(".") != 0 ||
      chdir("/") != 0) {
    error = errText("cannot switch root to the overlay");
    return false;
  }
  return true;
}

namespace {

bool setInterface(int s, const char* name, const char* address, const char* netmask) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  auto* addr = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
  addr->sin_family = AF_INET;
  if (address) {
    inet_pton(AF_INET, address, &addr->sin_addr);
    if (ioctl(s, SIOCSIFADDR, &ifr) != 0) return false;
    inet_pton(AF_INET, netmask, &addr->sin_addr);
    if (ioctl(s, SIOCSIFNETMASK, &ifr) != 0) return false;
  }
  if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) return false;
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  return ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
}

/// Kernel ABI of SIOCSIFADDR on an AF_INET6 socket (linux/ipv6.h clashes with netinet/in.h).
struct In6Ifreq {
  in6_addr addr;
  uint32_t prefixLen;
  int ifindex;
};

void writeProc(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!write(fd, text, std::strlen(text));
  close(fd);
}

/// Replaces the file at `path` (a link there is removed, not followed) with
/// `text`, mode 0644; said on the console when it cannot.
void replaceFile(const char* path, const std::string& text) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    logLine(std::string("cannot write ") + path + ": " + std::strerror(errno));
  if (fd >= 0) close(fd);
}

/// Adds `address`/`prefix` to eth0 and a default route via `gateway` (IPv6).
void setupIpv6(const char* address, unsigned prefix, const char* gateway) {
  int s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s6 < 0) {
    logLine(std::string("no IPv6 in the guest kernel: ") + std::strerror(errno));
    return;
  }
  In6Ifreq req{};
  inet_pton(AF_INET6, address, &req.addr);
  req.prefixLen = prefix;
  req.ifindex = static_cast<int>(if_nametoindex("eth0"));
  if (ioctl(s6, SIOCSIFADDR, &req) != 0) logLine(std::string("cannot add the IPv6 address: ") + std::strerror(errno));
  in6_rtmsg route{};
  inet_pton(AF_INET6, gateway, &route.rtmsg_gateway);
  route.rtmsg_flags = RTF_UP | RTF_GATEWAY;
  route.rtmsg_metric = 1;
  route.rtmsg_ifindex = req.ifindex;
  if (ioctl(s6, SIOCADDRT, &route) != 0)
    logLine(std::string("cannot add the IPv6 default route: ") + std::strerror(errno));
  close(s6);
}

/// eth0 with the guest addresses of egress/addresses.h (10.0.2.15/24 and
/// fd00:a1::15/64), default routes via the egress firewall's tap in the
/// session namespace (10.0.2.2 and fd00:a1::1), which also answers DNS
/// (/etc/resolv.conf).
void setupEth0(int s) {
  for (int attempt = 0; attempt < 500 && access("/sys/class/net/eth0", F_OK) != 0; ++attempt) usleep(10000);
  // Static addresses on a point-to-point link: skip duplicate address detection
  // (it would hold the IPv6 address tentative for a second).
  writeProc("/proc/sys/net/ipv6/conf/eth0/accept_dad", "0");
  static_assert(egress::kPrefixV4 > 0 && egress::kPrefixV4 < 32);
  in_addr netmask{htonl(~uint32_t{0} << (32 - egress::kPrefixV4))};
  char maskText[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &netmask, maskText, sizeof maskText);
  if (!setInterface(s, "eth0", egress::kGuestV4, maskText)) {
    logLine(std::string("cannot configure eth0: ") + std::strerror(errno));
    return;
  }
  rtentry route{};
  auto* dst = reinterpret_cast<sockaddr_in*>(&route.rt_dst);
  auto* gw = reinterpret_cast<sockaddr_in*>(&route.rt_gateway);
  auto* mask = reinterpret_cast<sockaddr_in*>(&route.rt_genmask);
  dst->sin_family = gw->sin_family = mask->sin_family = AF_INET;
  inet_pton(AF_INET, egress::kGatewayV4, &gw->sin_addr);
  route.rt_flags = RTF_UP | RTF_GATEWAY;
  if (ioctl(s, SIOCADDRT, &route) != 0) logLine(std::string("cannot add the default route: ") + std::strerror(errno));
  setupIpv6(egress::kGuestV6, egress::kPrefixV6, egress::kGatewayV6);
  replaceFile("/etc/resolv.conf",
              std::string("nameserver ") + egress::kGatewayV4 + "\nnameserver " + egress::kGatewayV6 + "\n");
}

}  // namespace

void setupHost(const BootConfig& config) {
  sethostname("airlock", 7);
  // localhost and the host name resolve in the guest, never through the
  // egress DNS (Debian's base has no /etc/hosts; docker writes one too).
  replaceFile("/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback airlock\n127.0.1.1\tairlock\n");
  // Dirty pages reach the scratch disk within about 2 s (not the kernel's
  // 30 s): when the host side dies (a detached session's supervisor killed),
  // the disk it keeps holds the agent's work up to then.
  writeProc("/proc/sys/vm/dirty_expire_centisecs", "200");
  writeProc("/proc/sys/vm/dirty_writeback_centisecs", "100");
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  setInterface(s, "lo", nullptr, nullptr);
  if (config.net == NetMode::kTap) setupEth0(s);
  close(s);
}

void powerOff() {
  sync();
  for (const char* path : {guest::kWorkspace, "/run/airlock/scratch", "/tmp"}) umount2(path, MNT_DETACH);
  sync();
  reboot(RB_POWER_OFF);
  for (;;) pause();
}

}  // namespace airlock::guest
