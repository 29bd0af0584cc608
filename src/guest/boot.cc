#include "guest/boot.h"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
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
    } else if (key == "airlock.probe") {
      config.probe = value == "1";
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

bool loadModules(std::string& error) {
  std::ifstream order("/lib/modules/load-order");
  std::string name;
  while (std::getline(order, name)) {
    if (name.empty()) continue;
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

void setupHost() {
  sethostname("airlock", 7);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
    ifr.ifr_flags |= IFF_UP;
    ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  close(s);
}

void powerOff() {
  sync();
  for (const char* path : {"/workspace", "/run/airlock/scratch", "/tmp"}) umount2(path, MNT_DETACH);
  sync();
  reboot(RB_POWER_OFF);
  for (;;) pause();
}

}  // namespace airlock::guest
