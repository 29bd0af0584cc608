#include "vm/qemu_vm.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <fstream>
#include <thread>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "common/thread_signals.h"
#include "common/visible_text.h"
#include "vm/jail.h"
#include "vm/qmp.h"

namespace airlock::vm {
namespace {

constexpr const char* kVirtiofsd = "/usr/lib/qemu/virtiofsd";

/// Waits until `path` exists (virtiofsd creates its socket after start-up).
bool waitForPath(const std::string& path, pid_t owner, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (access(path.c_str(), F_OK) == 0) return true;
    if (waitpid(owner, nullptr, WNOHANG) == owner) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

std::vector<std::string> lastLines(const std::string& path, size_t count) { return tailLines(path, count); }

/// The bytes of the VM's writable disks when they sit on tmpfs (`runDir`'s
/// file system): what QEMU's writes to them pin in memory; 0 elsewhere.
uint64_t residentDiskBytes(const VmConfig& config, const std::string& runDir) {
  struct statfs fs {};
  if (::statfs(runDir.c_str(), &fs) != 0 || fs.f_type != TMPFS_MAGIC) return 0;
  uint64_t total = 0;
  for (const auto& disk : config.disks) {
    struct stat st {};
    if (!disk.readOnly && ::stat(disk.path.c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

/// Appends `line` to the log at `path` (best effort: a note for the reader).
void noteInLog(const std::string& path, const std::string& line) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (fd) (void)writeAll(fd.get(), line + "\n");
}

/// Connects to the unix socket at `path` (QEMU creates it at start-up),
/// retrying while `alive()`, at most `timeout`.
Result<Fd> connectSocket(const std::string& path, const std::function<bool()>& alive,
                         std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return fail("socket path {} is too long", path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return fail("cannot create a socket: {}", errnoText(errno));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    int e = errno;
    if (!alive()) return fail("QEMU exited before its socket {} was ready", path);
    if (std::chrono::steady_clock::now() > deadline)
      return fail("cannot connect to the VM's socket {}: {}", path, errnoText(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// Starts virtiofsd for one share, jailed (vm/jail.h, ShareJailSpec): it
/// serves the directory as the share's owner only, from a private mount
/// namespace, and creates its socket in `runDir`/fsN (set as
/// share.socketPath). `asRoot`: airlock runs as root.
Result<pid_t> startVirtiofsd(Share& share, const std::string& runDir, size_t index, bool asRoot) {
  if (access(kVirtiofsd, X_OK) != 0)
    return failWith(exit_code::kHostNotReady, "{} not found; run scripts/setup (package qemu-system-common)",
                    kVirtiofsd);
  std::string logPath = runDir + "/virtiofsd.log";
  ShareJailSpec spec;
  spec.source = share.hostPath;
  spec.readOnly = share.readOnly;
  spec.socketDir = runDir + "/fs" + std::to_string(index);
  spec.ownerUid = share.ownerUid;
  spec.ownerGid = share.ownerGid;
  spec.dropToOwner = asRoot;
  if (mkdir(spec.socketDir.c_str(), 0700) != 0 ||
      (asRoot && chown(spec.socketDir.c_str(), share.ownerUid, share.ownerGid) != 0))
    return fail("cannot create {}: {}", spec.socketDir, errnoText(errno));
  share.socketPath = spec.socketDir + "/fs.sock";
  std::vector<std::string> argv = {kVirtiofsd,
                                   std::string("--socket-path=") + kShareSocketDir + "/fs.sock",
                                   "-o",
                                   std::string("source=") + kShareSource,
                                   "-o",
                                   "cache=auto",
                                   "-o",
                                   "sandbox=namespace",
                                   "--rlimit-nofile=0"};
  SpawnOptions options;
  options.stdoutPath = logPath;
  options.stderrPath = logPath;
  auto steps = shareServerSteps(spec);
  options.beforeExec = steps.beforeExec;
  options.afterFork = steps.afterFork;
  auto pid = spawnTied(argv, options);
  if (!pid)
    return failWith(exit_code::kHostNotReady, "cannot share {} with the VM: {}{}", share.hostPath, pid.error().message,
                    asRoot ? "" : " (unprivileged user namespaces must be enabled: see airlock doctor)");
  struct stat st {};
  if (!waitForPath(share.socketPath, *pid, std::chrono::seconds(10)) || lstat(share.socketPath.c_str(), &st) != 0 ||
      !S_ISSOCK(st.st_mode)) {
    kill(*pid, SIGKILL);
    waitpid(*pid, nullptr, 0);
    auto log = lastLines(logPath, 1);
    return failWith(exit_code::kHostNotReady, "virtiofsd for {} did not start: {}", share.hostPath,
                    log.empty() ? "no output" : log.back());
  }
  return *pid;
}

/// QEMU's view of `config` from inside its jail, and the jail: the sockets
/// of `ownDir` at /vm, the kernel, initramfs and disks at /in (the writable
/// ones handed to the jail's uid). Host-side paths stay in `config`.
Result<std::pair<VmConfig, JailSpec>> jailView(const VmConfig& config, const std::string& ownDir,
                                               const std::string& jailRoot) {
  VmConfig jailed = config;
  JailSpec spec;
  spec.root = jailRoot;
  spec.ownDir = ownDir;
  if (config.qemuUid) {
    spec.dropTo = *config.qemuUid;
    // The /dev/kvm group when it grants access (never group 0).
    struct stat kvm {};
    if (stat("/dev/kvm", &kvm) == 0 && kvm.st_gid != 0 && (kvm.st_mode & 060) == 060) spec.groups.push_back(kvm.st_gid);
  }
  auto inside = [&](const std::string& hostPath) {
    return hostPath.starts_with(ownDir + "/") ? spec.ownPath + hostPath.substr(ownDir.size()) : hostPath;
  };
  auto bindIn = [&](const std::string& hostPath, const std::string& name, bool writable) -> Result<std::string> {
    if (writable && config.qemuUid && lchown(hostPath.c_str(), *config.qemuUid, *config.qemuUid) != 0)
      return fail("cannot give {} to the VM's jail: {}", hostPath, errnoText(errno));
    // The jail's uid reads inputs through read-only binds: they must be readable by others.
    struct stat st {};
    if (!writable && config.qemuUid && (stat(hostPath.c_str(), &st) != 0 || !(st.st_mode & S_IROTH)))
      return fail("{} is not readable by QEMU's unprivileged uid; make it world-readable (chmod a+r; a umask of "
                  "022 when airlock builds it)", hostPath);
    spec.files.push_back({hostPath, "/in/" + name, writable});
    return "/in/" + name;
  };
  if (!jailed.qemuBinary.starts_with("/usr/")) {
    auto q = bindIn(jailed.qemuBinary, "qemu", false);
    if (!q) return std::unexpected(q.error());
    jailed.qemuBinary = *q;
  }
  for (auto* path : {&jailed.kernel, &jailed.initramfs}) {
    auto p = bindIn(*path, path == &jailed.kernel ? "kernel" : "initramfs", false);
    if (!p) return std::unexpected(p.error());
    *path = *p;
  }
  for (size_t i = 0; i < jailed.disks.size(); ++i) {
    auto p = bindIn(jailed.disks[i].path, "disk" + std::to_string(i), !jailed.disks[i].readOnly);
    if (!p) return std::unexpected(p.error());
    jailed.disks[i].path = *p;
  }
  for (size_t i = 0; i < jailed.shares.size(); ++i) {
    auto p = bindIn(jailed.shares[i].socketPath, "fs" + std::to_string(i) + ".sock", true);
    if (!p) return std::unexpected(p.error());
    jailed.shares[i].socketPath = *p;
  }
  for (auto& port : jailed.ports) port.socketPath = inside(port.socketPath);
  jailed.qmpSocket = inside(jailed.qmpSocket);
  jailed.consoleSocket = inside(jailed.consoleSocket);
  jailed.consoleLog = inside(jailed.consoleLog);
  return std::pair{std::move(jailed), std::move(spec)};
}

}  // namespace

Result<std::unique_ptr<QemuVm>> QemuVm::start(VmConfig config, const std::string& runDir, const std::string& stateDir,
                                              Janitor& janitor, std::chrono::milliseconds bootTimeout) {
  std::string qemu = findProgram(config.qemuBinary);
  if (qemu.empty())
    return failWith(exit_code::kHostNotReady, "{} not found; run scripts/setup (package qemu-system-x86)",
                    config.qemuBinary);
  config.qemuBinary = qemu;
  std::unique_ptr<QemuVm> vm(new QemuVm());
  // QEMU's own directory (its sockets) and the mount point of its jail's root.
  const std::string ownDir = runDir + "/qemu", jailRoot = runDir + "/jail";
  if (mkdir(ownDir.c_str(), 0700) != 0 || mkdir(jailRoot.c_str(), 0755) != 0)
    return fail("cannot create the VM's directories in {}: {}", runDir, errnoText(errno));
  if (config.qemuUid && chown(ownDir.c_str(), *config.qemuUid, *config.qemuUid) != 0)
    return fail("cannot give {} to the VM's jail: {}", ownDir, errnoText(errno));
  for (size_t i = 0; i < config.shares.size(); ++i) {
    auto pid = startVirtiofsd(config.shares[i], runDir, i, config.qemuUid.has_value());
    if (!pid) return std::unexpected(pid.error());
    janitor.watchPid(*pid);
    vm->helpers_.push_back(*pid);
  }
  for (const auto& served : config.servedPorts)
    config.ports.push_back({served.name, ownDir + "/" + served.name + ".sock"});
  config.ports.push_back({protocol::kPortName, ownDir + "/control.sock"});
  config.qmpSocket = ownDir + "/qmp.sock";
  if (config.consoleLog.empty()) config.consoleLog = runDir + "/console.log";
  config.consoleSocket = ownDir + "/console.sock";
  vm->config_ = config;
  auto jail = jailView(config, ownDir, jailRoot);
  if (!jail) return failWith(exit_code::kHostNotReady, "{}", jail.error().message);
  SpawnOptions qemuOptions{runDir + "/qemu.log", runDir + "/qemu.log", jailBeforeExec(jail->second), {}};
  qemuOptions.newPidNamespace = true;  // QEMU cannot see, signal or trace airlock or any other process
  if (!config.cgroupHierarchy.empty()) {
    const std::string name = "vm-" + std::to_string(getpid()) + "-" + runDir.substr(runDir.rfind('/') + 1);
    auto cgroup = VmCgroup::create(config.cgroupHierarchy, name,
                                   limitsForGuest(config.memoryMiB, residentDiskBytes(config, runDir)));
    if (cgroup) {
      vm->cgroup_.emplace(std::move(*cgroup));
      qemuOptions.beforeExec = [procs = vm->cgroup_->procsFd(), jail = qemuOptions.beforeExec]() -> int {
        if (int e = joinCgroup(procs); e != 0) return e;
        return jail();
      };
    } else {
      noteInLog(runDir + "/qemu.log", "airlock: QEMU runs without a cgroup memory and pids limit: " +
                                          cgroup.error().message);
    }
  }
  if (config.tapFd >= 0) qemuOptions.keepFds.push_back(config.tapFd);
  auto pid = spawnTied(buildQemuArgs(jail->first), qemuOptions);
  if (!pid) return failWith(exit_code::kVmFailed, "cannot start QEMU: {}", pid.error().message);
  vm->qemu_ = *pid;
  janitor.watchPid(*pid);
  // QEMU waits for the console's reader before it starts the guest.
  auto console = connectSocket(config.consoleSocket, [raw = vm.get()] { return raw->running(); },
                               std::chrono::seconds(30));
  if (console) {
    auto drain = ConsoleDrain::start(std::move(*console), config.consoleLog, config.consoleLimits);
    if (!drain) return failWith(exit_code::kVmFailed, "{}", drain.error().message);
    vm->console_ = std::move(*drain);
  } else {
    auto qemuLog = lastLines(runDir + "/qemu.log", 3);
    return failWith(exit_code::kVmFailed, "{}{}", console.error().message,
                    qemuLog.empty() ? "" : " (QEMU said: " + qemuLog.back() + ")");
  }
  auto alive = [raw = vm.get()] { return raw->running(); };
  // Before the guest can write to them (QEMU drops what a port gets with no
  // client), and QEMU made every socket before it waited for the console's.
  for (const auto& served : config.servedPorts) {
    auto port = connectSocket(ownDir + "/" + served.name + ".sock", alive, std::chrono::seconds(30));
    if (!port) return failWith(exit_code::kVmFailed, "{}", port.error().message);
    vm->services_.emplace_back([serve = served.serve, fd = port->get(), log = config.serviceLog] {
      blockSignalsInThisThread();  // the main thread's signalfd takes them (common/thread_signals.h)
      std::function<void(const std::string&)> sink = log;
      if (!sink) sink = [](const std::string&) {};
      serve(fd, sink);
    });
    vm->servicePorts_.push_back(std::move(*port));
  }
  auto control = ControlChannel::connect(ownDir + "/control.sock", std::chrono::seconds(30), alive);
  if (!control) {
    auto qemuLog = lastLines(runDir + "/qemu.log", 3);
    std::string detail = qemuLog.empty() ? "" : " (QEMU said: " + visibleText(qemuLog.back()) + ")";
    return failWith(exit_code::kVmFailed, "{}{}", control.error().message, detail);
  }
  vm->control_ = std::move(*control);
  if (auto ready = vm->control_->waitReady(bootTimeout); !ready) {
    std::string reason = vm->crashReason();
    vm->stop();
    // The run directory goes away with the VM: keep the console for the user.
    std::string kept = stateDir + "/last-boot-failure.log";
    auto consoleText = readFile(vm->config_.consoleLog, 16 << 20);  // capped by the drain
    bool saved = consoleText && makeDirs(stateDir, 0700) && writeFileAtomic(kept, *consoleText, 0600);
    return failWith(exit_code::kVmFailed, "the VM failed to boot: {}{}{}", ready.error().message,
                    reason.empty() ? "" : " (" + reason + ")", saved ? "; guest console saved to " + kept : "");
  }
  return vm;
}

bool QemuVm::running() {
  if (qemu_ < 0 || qemuStatus_) return false;
  int status = 0;
  pid_t r = waitpid(qemu_, &status, WNOHANG);
  if (r == qemu_) {
    qemuStatus_ = status;
    return false;
  }
  return r == 0;
}

bool QemuVm::waitExit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void QemuVm::stop() {
  if (running()) {
    // A guest whose channel is closed (it broke a limit, or went away) gets no
    // grace to power itself off: QMP quit at once.
    bool asked = control_ && control_->closedReason().empty() && control_->shutdown();
    if (!asked || !waitExit(std::chrono::seconds(5))) {
      (void)qmpExecute(config_.qmpSocket, "quit", std::chrono::seconds(1));
      if (!waitExit(std::chrono::seconds(2))) {
        kill(qemu_, SIGTERM);
        if (!waitExit(std::chrono::seconds(2))) {
          kill(qemu_, SIGKILL);
          waitExit(std::chrono::seconds(5));
        }
      }
    }
  }
  control_.reset();
  console_.reset();
  stopServices();
  reapHelpers();
  cgroup_.reset();
}

void QemuVm::stopServices() {
  for (auto& port : servicePorts_) ::shutdown(port.get(), SHUT_RDWR);
  for (auto& thread : services_) thread.join();
  services_.clear();
  servicePorts_.clear();
}

void QemuVm::reapHelpers() {
  for (pid_t pid : helpers_) {
    // virtiofsd exits when QEMU closes its vhost-user socket; give it a moment.
    bool reaped = false;
    for (int i = 0; i < 100 && !reaped; ++i) {
      reaped = waitpid(pid, nullptr, WNOHANG) == pid;
      if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!reaped) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  helpers_.clear();
}

QemuVm::~QemuVm() { stop(); }

std::string QemuVm::consoleTail(size_t lines) const {
  std::string out;
  for (const auto& line : lastLines(config_.consoleLog, lines)) out += visibleText(line) + "\n";
  return out;
}

std::string QemuVm::crashReason() const {
  for (const auto& line : lastLines(config_.consoleLog, 200)) {
    // Guest text, quoted after "airlock:": escaped (see common/visible_text.h).
    if (line.find("Kernel panic") != std::string::npos)
      return "guest " + visibleText(line.substr(line.find("Kernel panic")));
    if (line.find("airlock-init: fatal:") != std::string::npos) return visibleText(line.substr(line.find("airlock-init")));
  }
  return "";
}

}  // namespace airlock::vm
