#include "vm/accel.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/exit_codes.h"

namespace airlock::vm {

HostFacts probeHost() {
  HostFacts facts;
  int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  facts.kvmDeviceUsable = fd >= 0;
  facts.kvmOpenError = fd >= 0 ? 0 : errno;
  if (fd >= 0) close(fd);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::stringstream ss(line);
    std::string flag;
    while (ss >> flag) facts.cpuHasVirt |= flag == "vmx" || flag == "svm";
    break;
  }
  facts.kvmPvmLoaded = access("/sys/module/kvm_pvm", F_OK) == 0;
  return facts;
}

HostFacts forJailedQemu(HostFacts facts) {
  struct stat st {};
  if (facts.kvmDeviceUsable &&
      (stat("/dev/kvm", &st) != 0 || st.st_gid == 0 || (st.st_mode & 060) != 060)) {
    facts.kvmDeviceUsable = false;
    facts.kvmOpenError = EPERM;
  }
  return facts;
}

std::string kvmUnusableReason(const HostFacts& facts) {
  const bool permission = facts.kvmOpenError == EACCES || facts.kvmOpenError == EPERM;
  if (!facts.kvmDeviceUsable && facts.kvmOpenError == ENOENT) return "/dev/kvm is missing (no KVM on this host)";
  if (!facts.kvmDeviceUsable && !permission) return "/dev/kvm is missing or not accessible";
  // What the hardware cannot do comes before permissions: no group or mode
  // fixes a kvm_pvm host.
  if (facts.kvmPvmLoaded && !facts.cpuHasVirt)
    return "/dev/kvm is kvm_pvm (software nested virtualization, no VT-x/AMD-V), which cannot boot stock kernels";
  if (!facts.cpuHasVirt) return "the CPU reports no VT-x/AMD-V (vmx/svm)";
  if (!facts.kvmDeviceUsable && facts.kvmOpenError == EPERM)
    return "/dev/kvm is not read-write for a group (such as kvm), which QEMU's unprivileged uid needs when airlock "
           "runs as root";
  if (!facts.kvmDeviceUsable) return "/dev/kvm is not read-write for your user";
  return "";
}

Result<> checkAccelRequest(AccelRequest request, const HostFacts& facts) {
  if (request != AccelRequest::kKvm) return {};
  if (auto why = kvmUnusableReason(facts); !why.empty())
    return failWith(exit_code::kHostNotReady, "--accel kvm: KVM cannot work on this host: {}; use --accel auto "
                    "(or tcg) for QEMU's emulation, see airlock doctor", why);
  return {};
}

AccelChoice chooseAccel(AccelRequest request, const HostFacts& facts, const std::function<bool()>& bootProbe) {
  if (request == AccelRequest::kKvm) return {Accel::kKvm, ""};
  if (request == AccelRequest::kTcg) return {Accel::kTcg, ""};
  const char* cost = "using QEMU's TCG emulation: boot and CPU-bound work are several times slower";
  if (auto why = kvmUnusableReason(facts); !why.empty()) return {Accel::kTcg, why + "; " + cost};
  if (!bootProbe()) return {Accel::kTcg, std::string("a KVM test boot did not reach init; ") + cost};
  return {Accel::kKvm, ""};
}

unsigned hostTscKhz() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) return 0;
    double mhz = std::strtod(line.c_str() + colon + 1, nullptr);
    return mhz > 0 && mhz < 100000 ? static_cast<unsigned>(mhz * 1000.0) : 0;
  }
  return 0;
}

bool parseAccel(const std::string& text, AccelRequest& out) {
  if (text == "auto") out = AccelRequest::kAuto;
  else if (text == "kvm") out = AccelRequest::kKvm;
  else if (text == "tcg") out = AccelRequest::kTcg;
  else return false;
  return true;
}

}  // namespace airlock::vm
