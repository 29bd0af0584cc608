#include "vm/jail.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/fd.h"

namespace airlock::vm {
namespace {

/// Empties the capability bounding set (needs CAP_SETPCAP; a process without
/// it has an empty permitted set already). Returns 0 or an errno.
int dropBoundingSet() noexcept {
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;  // past the kernel's last capability
    if (errno == EPERM) break;   // no CAP_SETPCAP
    return errno;
  }
  return 0;
}

/// One system call of the jail's construction, with its arguments prepared.
struct Step {
  enum Kind { kMkdir, kTouch, kSymlink, kBind, kReadOnly, kReadOnlyTop, kNoSuid } kind;
  std::string a, b;
};

/// Everything the child needs, allocated before fork.
struct Plan {
  std::string root;
  std::vector<Step> steps;
  std::optional<uid_t> dropTo;
  std::vector<gid_t> groups;
};

int setAttributes(int dirfd, const char* path, unsigned flags, uint64_t set) noexcept {
  mount_attr attr{};
  attr.attr_set = set;
  return ::mount_setattr(dirfd, path, flags, &attr, sizeof attr) == 0 ? 0 : errno;
}

int run(const Step& s) noexcept {
  switch (s.kind) {
    case Step::kMkdir:
      return ::mkdir(s.a.c_str(), 0755) == 0 || errno == EEXIST ? 0 : errno;
    case Step::kTouch: {
      int fd = ::open(s.a.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0) return errno;
      ::close(fd);
      return 0;
    }
    case Step::kSymlink:
      return ::symlink(s.b.c_str(), s.a.c_str()) == 0 ? 0 : errno;
    case Step::kBind:
      return ::mount(s.b.c_str(), s.a.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0 ? 0 : errno;
    case Step::kReadOnly:
      return setAttributes(AT_FDCWD, s.a.c_str(), AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    case Step::kReadOnlyTop:
      return setAttributes(AT_FDCWD, s.a.c_str(), 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    case Step::kNoSuid:
      return setAttributes(AT_FDCWD, s.a.c_str(), AT_RECURSIVE, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  }
  return EINVAL;
}

int enter(const Plan& p) noexcept {
  if (::unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET) != 0) return errno;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (::mount("tmpfs", p.root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) return errno;
  for (const Step& s : p.steps)
    if (int e = run(s); e != 0) return e;
  if (::chdir(p.root.c_str()) != 0) return errno;
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return errno;
  if (::umount2(".", MNT_DETACH) != 0) return errno;
  if (::chdir("/") != 0) return errno;
  if (int e = dropBoundingSet(); e != 0) return e;
  if (p.dropTo) {
    // Raw system calls: glibc's wrappers signal every thread, which a
    // forked child of a multithreaded process must not.
    if (::syscall(SYS_setgroups, p.groups.size(), p.groups.data()) != 0) return errno;
    if (::syscall(SYS_setresgid, *p.dropTo, *p.dropTo, *p.dropTo) != 0) return errno;
    if (::syscall(SYS_setresuid, *p.dropTo, *p.dropTo, *p.dropTo) != 0) return errno;
    // The change of uid clears the parent-death signal: spawnTied arms it
    // again after this step.
  }
  return confineBeforeExec();
}

/// Writes `text` to the file at `path` (a /proc map). Returns 0 or an errno.
int writeProcText(const std::string& path, const std::string& text) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  return writeAll(fd.get(), text) ? 0 : (errno ? errno : EIO);
}

/// What virtiofsd keeps (its own default set, plus CAP_SYS_ADMIN for its
/// namespace sandbox and CAP_SETPCAP for its bounding-set drop): raised as
/// ambient capabilities in its user namespace.
constexpr int kShareServerCaps[] = {CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID,   CAP_SETGID,
                                    CAP_SETUID, CAP_MKNOD,        CAP_SETFCAP, CAP_SYS_ADMIN, CAP_SETPCAP};

/// A seccomp filter for virtiofsd: no setuid or setgid bit, whatever the
/// guest asks (chmod family, and the mode of open/creat with O_CREAT or
/// O_TMPFILE, mkdir and mknod): EPERM. openat2 (whose mode sits behind a
/// pointer) fails with ENOSYS; x32 and foreign-architecture calls with EPERM.
std::vector<sock_filter> noSetidFilter() {
  constexpr uint32_t kAllow = SECCOMP_RET_ALLOW, kEperm = SECCOMP_RET_ERRNO | EPERM;
  constexpr uint32_t kSetid = S_ISUID | S_ISGID;
  auto low = [](int arg) { return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * arg); };
  std::vector<sock_filter> f = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, kEperm),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),  // x32
      BPF_STMT(BPF_RET | BPF_K, kEperm),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
  };
  // nr -> (the mode's argument, the flags' argument or -1)
  const struct { long nr; int mode; int flags; } calls[] = {
      {SYS_chmod, 1, -1},  {SYS_fchmod, 1, -1},  {SYS_fchmodat, 2, -1}, {452 /* fchmodat2 */, 2, -1},
      {SYS_mkdir, 1, -1},  {SYS_mkdirat, 2, -1}, {SYS_mknod, 1, -1},    {SYS_mknodat, 2, -1},
      {SYS_creat, 1, -1},  {SYS_open, 2, 1},     {SYS_openat, 3, 2},
  };
  for (const auto& c : calls) {
    std::vector<sock_filter> check;
    if (c.flags >= 0) {
      check.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, low(c.flags)));
      check.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_CREAT | __O_TMPFILE, 0, 3));
    }
    check.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, low(c.mode)));
    check.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kSetid, 0, 1));
    check.push_back(BPF_STMT(BPF_RET | BPF_K, kEperm));
    check.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
    // nr matches: run the check; else skip it (the accumulator holds nr again after a reload).
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(c.nr), 0,
                         static_cast<uint8_t>(check.size())));
    f.insert(f.end(), check.begin(), check.end());
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
  return f;
}

/// The two ends of a pipe, closed with the plan.
struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) read = fds[0], write = fds[1];
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

struct SharePlan {
  ShareJailSpec spec;
  Pipe childReady;        ///< child -> parent: "my user namespace exists"
  Pipe mapsWritten;       ///< parent -> child: "its uid and gid maps are written"
  std::string uidMap, gidMap;
  std::vector<sock_filter> filter = noSetidFilter();
};

/// Child side (async-signal-safe: system calls only).
int enterShareJail(const SharePlan& p) noexcept {
  const ShareJailSpec& s = p.spec;
  if (p.childReady.write < 0 || p.mapsWritten.read < 0) return EMFILE;
  ::close(p.childReady.read);
  ::close(p.mapsWritten.write);
  if (::unshare(CLONE_NEWNS) != 0) return errno;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  // Detached copies of the share and the socket directory, taken before the
  // private /run below can hide them (a share under /run/media, a state
  // directory under /run/user).
  int share = ::open_tree(AT_FDCWD, s.source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (share < 0) return errno;
  uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (s.readOnly ? MOUNT_ATTR_RDONLY : 0);
  if (int e = setAttributes(share, "", AT_EMPTY_PATH | AT_RECURSIVE, attrs); e != 0) return e;
  int socketDir = ::open_tree(AT_FDCWD, s.socketDir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (socketDir < 0) return errno;
  // virtiofsd keeps its pid file in /run/virtiofsd: a private /run.
  if (::mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m") != 0) return errno;
  if (::mkdir("/run/virtiofsd", 0700) != 0) return errno;
  if (::mkdir(kShareSource, 0755) != 0 || ::mkdir(kShareSocketDir, 0700) != 0) return errno;
  if (s.dropToOwner && ::chown("/run/virtiofsd", s.ownerUid, s.ownerGid) != 0) return errno;
  if (::move_mount(share, "", AT_FDCWD, kShareSource, MOVE_MOUNT_F_EMPTY_PATH) != 0) return errno;
  if (::move_mount(socketDir, "", AT_FDCWD, kShareSocketDir, MOVE_MOUNT_F_EMPTY_PATH) != 0) return errno;
  // The user namespace is created by airlock's uid (root stays its owner, so
  // the share's owner gets no power over this process); the parent writes
  // the maps, then this process becomes the owner inside it.
  if (::unshare(CLONE_NEWUSER) != 0) return errno;
  char byte = 1;
  if (::write(p.childReady.write, &byte, 1) != 1) return errno;
  if (::read(p.mapsWritten.read, &byte, 1) != 1) return ECHILD;
  if (s.dropToOwner) {
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
    if (::syscall(SYS_setresgid, s.ownerGid, s.ownerGid, s.ownerGid) != 0) return errno;
    if (::syscall(SYS_setresuid, s.ownerUid, s.ownerUid, s.ownerUid) != 0) return errno;
    // The change of uid clears the parent-death signal: spawnTied arms it
    // again after this step.
  }
  // The creator of a user namespace holds every capability in it; keep the
  // ones virtiofsd needs across exec (ambient), and no others.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, caps) != 0) return errno;
  for (int cap : kShareServerCaps) {
    if (!(caps[cap / 32].permitted & (1u << (cap % 32)))) return EPERM;
    caps[cap / 32].inheritable |= 1u << (cap % 32);
  }
  if (::syscall(SYS_capset, &header, caps) != 0) return errno;
  for (int cap : kShareServerCaps)
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) return errno;
  const rlimit noCore{0, 0};
  if (::setrlimit(RLIMIT_CORE, &noCore) != 0) return errno;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  sock_fprog program{static_cast<unsigned short>(p.filter.size()), const_cast<sock_filter*>(p.filter.data())};
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) return errno;
  return 0;
}

/// Parent side: waits for the child's user namespace, writes its maps.
int mapShareJail(SharePlan& p, pid_t child) {
  ::close(p.childReady.write);
  p.childReady.write = -1;
  ::close(p.mapsWritten.read);
  p.mapsWritten.read = -1;
  char byte = 0;
  ssize_t n;
  while ((n = ::read(p.childReady.read, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) return ECHILD;  // the child failed before its namespace existed
  const std::string proc = "/proc/" + std::to_string(child);
  if (int e = writeProcText(proc + "/uid_map", p.uidMap); e != 0) return e;
  if (int e = writeProcText(proc + "/gid_map", p.gidMap); e != 0) return e;
  return ::write(p.mapsWritten.write, &byte, 1) == 1 ? 0 : errno;
}

bool isSymlink(const std::string& path, std::string& target) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return false;
  target.assign(buf, static_cast<size_t>(n));
  return true;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

int confineBeforeExec() noexcept {
  const rlimit noCore{0, 0};
  if (::setrlimit(RLIMIT_CORE, &noCore) != 0) return errno;
  // The bounding set limits what any later exec can grant (uid 0 otherwise
  // regains every capability at exec).
  if (int e = dropBoundingSet(); e != 0) return e;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, none) != 0) return errno;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  return 0;
}

uid_t jailUidFor(pid_t airlockPid) {
  // Above systemd's dynamic-user and container ranges' usual allocations,
  // below 2^31 (some tools read uids as signed); 2^24 values cover every
  // possible pid (pid_max is at most 2^22).
  constexpr uid_t kBase = 0x7f000000;
  return kBase + static_cast<uid_t>(airlockPid % 0x1000000);
}

ShareServerSteps shareServerSteps(const ShareJailSpec& spec) {
  auto plan = std::make_shared<SharePlan>();
  plan->spec = spec;
  // Inside: the owner's ids. Outside (airlock's namespace): the same ids
  // when airlock is root, else 0 (airlock is root of its own namespace,
  // which maps it to the owner).
  plan->uidMap = std::to_string(spec.ownerUid) + " " + std::to_string(spec.dropToOwner ? spec.ownerUid : 0) + " 1";
  plan->gidMap = std::to_string(spec.ownerGid) + " " + std::to_string(spec.dropToOwner ? spec.ownerGid : 0) + " 1";
  return {[plan]() -> int { return enterShareJail(*plan); },
          [plan](pid_t child) -> int { return mapShareJail(*plan, child); }};
}

std::function<int()> jailBeforeExec(const JailSpec& spec) {
  auto plan = std::make_shared<Plan>();
  plan->root = spec.root;
  plan->dropTo = spec.dropTo;
  plan->groups = spec.groups;
  const std::string& r = spec.root;
  auto& steps = plan->steps;
  auto mkdirOnce = [&](const std::string& jailDir) {
    for (const auto& s : steps)
      if (s.kind == Step::kMkdir && s.a == r + jailDir) return;
    steps.push_back({Step::kMkdir, r + jailDir, ""});
  };
  // The program and its libraries.
  mkdirOnce("/usr");
  steps.push_back({Step::kBind, r + "/usr", "/usr"});
  steps.push_back({Step::kReadOnly, r + "/usr", ""});
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib64"}) {
    std::string target;
    if (isSymlink(top, target)) {
      steps.push_back({Step::kSymlink, r + top, target});
    } else if (exists(top)) {
      mkdirOnce(top);
      steps.push_back({Step::kBind, r + top, top});
      steps.push_back({Step::kReadOnly, r + top, ""});
    }
  }
  std::vector<JailSpec::File> files = spec.files;
  if (exists("/etc/ld.so.cache")) files.push_back({"/etc/ld.so.cache", "/etc/ld.so.cache", false});
  // Device nodes keep their mount's flags (a nodev bind would disable them).
  mkdirOnce("/dev");
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/kvm"}) {
    if (!exists(dev)) continue;
    steps.push_back({Step::kTouch, r + dev, ""});
    steps.push_back({Step::kBind, r + dev, dev});
  }
  mkdirOnce(spec.ownPath);
  steps.push_back({Step::kBind, r + spec.ownPath, spec.ownDir});
  steps.push_back({Step::kNoSuid, r + spec.ownPath, ""});
  for (const auto& f : files) {
    auto slash = f.jailPath.rfind('/');
    if (slash != 0 && slash != std::string::npos) mkdirOnce(f.jailPath.substr(0, slash));
    struct stat st {};
    bool dir = ::stat(f.hostPath.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    steps.push_back({dir ? Step::kMkdir : Step::kTouch, r + f.jailPath, ""});
    steps.push_back({Step::kBind, r + f.jailPath, f.hostPath});
    steps.push_back({f.writable ? Step::kNoSuid : Step::kReadOnly, r + f.jailPath, ""});
  }
  steps.push_back({Step::kReadOnlyTop, r, ""});
  return [plan]() -> int { return enter(*plan); };
}

}  // namespace airlock::vm
