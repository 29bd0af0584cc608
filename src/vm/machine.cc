#include "vm/machine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "egress/user_namespace.h"
#include "vm/boot_assets.h"
#include "vm/jail.h"
#include "vm/run_dirs.h"
#include "vm/workspace_image.h"

namespace airlock::vm {
namespace {

bool isDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<> makeScratchDisk(const std::string& path, unsigned sizeMiB) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd || ftruncate(fd.get(), off_t{sizeMiB} << 20) != 0)
    return fail("cannot create the scratch disk {}: {}", path, errnoText(errno));
  fd.reset();
  auto out = runChecked({"mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-E",
                         "lazy_itable_init=1,lazy_journal_init=1,nodiscard", "-L", "scratch", path});
  if (!out) return failWith(exit_code::kHostNotReady, "cannot format the scratch disk: {}", out.error().message);
  return {};
}

/// Boots the kernel under KVM with airlock.probe=1 and reports whether init
/// was reached. The answer is cached per kernel under `cacheDir`/accel.
bool kvmBootProbe(const std::string& cacheDir, const BootAssets& assets, const std::string& runDir) {
  std::string cacheFile = cacheDir + "/accel/kvm-probe-" + sha256Hex(assets.kernel + assets.kernelRelease);
  if (auto cached = readFile(cacheFile)) return *cached == "ok";
  VmConfig probe;
  probe.accel = Accel::kKvm;
  probe.kernel = assets.kernel;
  probe.initramfs = assets.initramfs;
  probe.extraCmdline = "airlock.probe=1";
  probe.consoleLog = runDir + "/probe-console.log";
  bool ok = false;
  auto pid = spawnTied(buildQemuArgs(probe), {runDir + "/probe-qemu.log", runDir + "/probe-qemu.log", {}});
  if (pid) {
    int status = 0;
    bool exited = false;
    for (int i = 0; i < 2000 && !exited; ++i) {
      exited = waitpid(*pid, &status, WNOHANG) == *pid;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exited) {
      kill(*pid, SIGKILL);
      waitpid(*pid, nullptr, 0);
    }
    auto console = readFile(probe.consoleLog);
    ok = console && console->find("boot probe reached init") != std::string::npos;
  }
  (void)makeDirs(cacheDir + "/accel");
  (void)writeFileAtomic(cacheFile, ok ? "ok" : "fail");
  return ok;
}

}  // namespace

Result<std::string> findInitBinary(const HostContext& host) {
  if (std::string env = host.getEnv("AIRLOCK_INIT"); !env.empty()) {
    if (access(env.c_str(), R_OK) != 0)
      return failWith(exit_code::kHostNotReady, "AIRLOCK_INIT={} is not readable", env);
    return env;
  }
  for (const std::string& candidate : {host.selfDir + "/airlock-init", host.selfDir + "/../lib/airlock/airlock-init"})
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  return failWith(exit_code::kHostNotReady,
                  "airlock-init not found next to {}; build it with scripts/build (target airlock-init)", host.selfDir);
}

Result<std::unique_ptr<Machine>> Machine::launch(const HostContext& host, const LaunchOptions& options) {
  if (options.cpus < 1 || options.cpus > 64) return failWith(exit_code::kUsage, "--cpus must be between 1 and 64");
  if (options.memoryMiB < 128 || options.memoryMiB > 65536)
    return failWith(exit_code::kUsage, "--memory must be between 128 and 65536 MiB");
  // As root, QEMU runs as an unprivileged uid: what matters is whether that uid can use /dev/kvm.
  const HostFacts facts = host.euid == 0 ? forJailedQemu(probeHost()) : probeHost();
  if (auto r = checkAccelRequest(options.accel, facts); !r) return std::unexpected(r.error());
  auto init = findInitBinary(host);
  if (!init) return std::unexpected(init.error());
  auto assets = ensureBootAssets(host.dirs.cache, *init, options.progress);
  if (!assets) return std::unexpected(assets.error());
  // What a reboot or a killed janitor left goes first (a kept scratch disk to its session).
  sweepStaleRunDirs(host.dirs.state + "/vms", host.dirs.state + "/sessions");
  auto runDir = TempDir::create(host.dirs.state + "/vms", "vm-");
  if (!runDir) return failWith(exit_code::kHostNotReady, "{}", runDir.error().message);
  auto ownerLock = lockRunDir(runDir->path());
  if (!ownerLock) return failWith(exit_code::kHostNotReady, "{}", ownerLock.error().message);
  if (runDir->path().size() + 20 > 107)
    return failWith(exit_code::kHostNotReady, "the state directory path {} is too long for unix sockets; set "
                    "XDG_STATE_HOME to a shorter path", runDir->path());
  // The janitor is `airlock __janitor`; $AIRLOCK_EXE names the binary when the
  // caller is not airlock itself (the VM tests).
  std::string exe = host.getEnv("AIRLOCK_EXE");
  // It shares the run directory's lock: no sweep while it cleans up.
  auto janitor = Janitor::start(!exe.empty() ? exe : "/proc/self/exe", ownerLock->get());
  if (!janitor) return std::unexpected(janitor.error());
  if (!options.cleanupLock.empty()) janitor->holdLock(options.cleanupLock);
  janitor->watchDir(runDir->path());
  // The session's snapshot is a full copy of the workspace: if airlock dies
  // while the VM runs (Ctrl-C during boot, SIGKILL), it goes too.
  if (!options.workspaceSnapshot.empty()) janitor->watchDir(options.workspaceSnapshot);
  std::unique_ptr<Machine> machine(new Machine(std::move(*runDir), std::move(*janitor)));
  machine->ownerLock_ = std::move(*ownerLock);
  const std::string& dir = machine->runDir_.path();

  VmConfig config;
  config.cpus = options.cpus;
  config.memoryMiB = options.memoryMiB;
  config.consoleLimits = options.console;
  config.kernel = assets->kernel;
  config.initramfs = assets->initramfs;
  if (host.euid == 0) {
    config.qemuUid = jailUidFor(getpid());
    config.cgroupHierarchy = "/sys/fs/cgroup";
  }
  AccelChoice accel =
      chooseAccel(options.accel, facts, [&] { return kvmBootProbe(host.dirs.cache, *assets, dir); });
  config.accel = accel.accel;
  if (config.accel == Accel::kTcg) config.tscKhz = hostTscKhz();
  // The TCG fallback only costs speed: a notice (silenced by -q), not a warning.
  if (!accel.warning.empty()) report(options.notice, accel.warning);
  std::string scratch = options.scratchDisk;
  if (scratch.empty()) {
    scratch = dir + "/scratch.ext4";
    if (auto disk = makeScratchDisk(scratch, options.scratchMiB); !disk) return std::unexpected(disk.error());
    if (!options.keepScratchAt.empty()) {
      machine->janitor_.keepFile(scratch, options.keepScratchAt);
      if (auto r = writeFileAtomic(dir + "/" + kRunDirKeep, options.keepScratchAt + "\n", 0600); !r)
        return std::unexpected(r.error());
    }
  }
  config.disks.push_back({options.rootImage, "root", true, "raw"});
  config.disks.push_back({scratch, "scratch", false, "raw"});
  if (!options.workspaceSnapshot.empty()) {
    if (!isDirectory(options.workspaceSnapshot))
      return failWith(exit_code::kUsage, "workspace snapshot {} is not a directory", options.workspaceSnapshot);
    report(options.progress, "writing the workspace image");
    const std::string image = dir + "/workspace.erofs";
    if (auto r = buildWorkspaceImage(options.workspaceSnapshot, image); !r) return std::unexpected(r.error());
    config.disks.push_back({image, "workspace", true, "raw"});
    config.workspaceSerial = "workspace";
  } else if (!options.workspaceDir.empty()) {
    if (!isDirectory(options.workspaceDir))
      return failWith(exit_code::kUsage, "workspace {} is not a directory", options.workspaceDir);
    char* real = realpath(options.workspaceDir.c_str(), nullptr);
    std::string hostPath = real ? real : options.workspaceDir;
    free(real);
    // virtiofsd acts as the directory's owner; an unprivileged user shares as itself.
    struct stat st {};
    if (stat(hostPath.c_str(), &st) != 0)
      return failWith(exit_code::kUsage, "cannot read workspace {}: {}", hostPath, errnoText(errno));
    bool root = host.euid == 0;
    if (root && st.st_uid == 0 && options.workspaceReadWrite)
      return failWith(exit_code::kUsage, "direct mode on {}, which belongs to root, would let the guest create "
                      "root-owned and setuid-root files there; use the default snapshot mode, or a workspace owned "
                      "by a user", hostPath);
    config.shares.push_back({"workspace", hostPath, "/workspace", !options.workspaceReadWrite, "",
                             root ? st.st_uid : host.euid, root ? st.st_gid : getegid()});
  }
  // QEMU's jail needs mount namespaces: an unprivileged airlock becomes root
  // of its own user namespace first (the egress network needs it too).
  auto namespaceRoot = egress::becomeNamespaceRoot();
  if (!namespaceRoot)
    return std::unexpected(options.egress ? namespaceRoot.error()
                                          : withCode(namespaceRoot.error(), exit_code::kHostNotReady));
  // virtiofsd (QEMU 7.2's) first drops the supplementary groups it has,
  // which it cannot where airlock's user namespace keeps them locked: say
  // so before anything boots.
  if (host.euid != 0 && !config.shares.empty() && !namespaceRoot->groupsLocked.empty())
    return failWith(exit_code::kHostNotReady,
                    "cannot share {}: virtiofsd must drop your supplementary groups, and {}; or use a snapshot "
                    "instead (--review=auto, all or none)",
                    config.shares.front().hostPath, namespaceRoot->groupsLocked);
  if (options.egress) {
    auto network = egress::SessionNetwork::start(*options.egress, options.egressNetwork);
    if (!network) return std::unexpected(network.error());
    machine->network_ = std::move(*network);
    config.tapFd = machine->network_->tapFd();
    config.serviceLog = machine->network_->log();
    for (const auto& port : options.publish) {
      auto publisher = egress::PortPublisher::start(machine->network_->netns(), port,
                                                    [warn = options.warn](const std::string& line) { report(warn, line); });
      if (!publisher) return std::unexpected(publisher.error());
      machine->publishers_.push_back(std::move(*publisher));
    }
  } else if (!options.publish.empty()) {
    return failWith(exit_code::kUsage, "--publish needs the guest on the egress firewall (an egress profile)");
  }
  config.servedPorts = options.servedPorts;
  report(options.progress, accel.accel == Accel::kKvm ? "booting VM (KVM)" : "booting VM (TCG emulation)");
  auto bootTimeout = accel.accel == Accel::kKvm ? std::chrono::seconds(30) : std::chrono::seconds(120);
  auto vm = QemuVm::start(config, dir, host.dirs.state, machine->janitor_, bootTimeout);
  if (!vm) return std::unexpected(vm.error());
  machine->vm_ = std::move(*vm);
  return machine;
}

void Machine::stop() {
  if (vm_) vm_->stop();
  vm_.reset();
  publishers_.clear();
  network_.reset();
  (void)removeTree(runDir_.path());
  janitor_.clear();
}

Machine::~Machine() { stop(); }

Result<std::shared_ptr<Command>> Machine::exec(const protocol::ExecRequest& request, OutputHandlers handlers) {
  if (!vm_) return failWith(exit_code::kVmFailed, "the VM is stopped");
  auto cmd = vm_->control().exec(request, std::move(handlers));
  if (!cmd) return std::unexpected(cmd.error());
  return std::shared_ptr<Command>(std::move(*cmd));
}

Result<uint64_t> Machine::exportWorkspace(const std::string& destPath, const ExportLimits& limits) {
  if (!vm_) return failWith(exit_code::kVmFailed, "the VM is stopped");
  return vm_->control().exportWorkspace(destPath, limits);
}

std::string Machine::crashReason() const { return vm_ ? vm_->crashReason() : std::string(); }

std::vector<std::string> Machine::blockedEgress() const {
  std::vector<std::string> lines;
  if (!network_) return lines;
  for (const auto& entry : network_->blocked())
    lines.push_back(fmt::format("{} ({}): {}x", entry.what, entry.reason, entry.count));
  if (auto counters = network_->dropCounters())
    for (const auto& [name, packets] : *counters)
      if (packets > 0 && name.starts_with("drop_"))
        lines.push_back(fmt::format("{} packets dropped by firewall rule {}", packets, name));
  return lines;
}

}  // namespace airlock::vm
