#pragma once
// Choosing the accelerator: KVM when it is really usable, QEMU's TCG
// emulation otherwise. "Usable" is more than /dev/kvm existing: kvm_pvm
// (software nested virtualization, no VT-x/AMD-V) provides /dev/kvm but
// cannot run stock guest kernels.

#include <functional>
#include <string>

#include "vm/vm_config.h"

namespace airlock::vm {

enum class AccelRequest { kAuto, kKvm, kTcg };

/// What the host offers, gathered by probeHost() or set by a test.
struct HostFacts {
  bool kvmDeviceUsable = false;  ///< /dev/kvm opens read-write
  bool cpuHasVirt = false;       ///< vmx or svm in /proc/cpuinfo flags
  bool kvmPvmLoaded = false;     ///< /sys/module/kvm_pvm exists
};

struct AccelChoice {
  Accel accel = Accel::kTcg;
  /// Empty when KVM was chosen; else why TCG is used and what it costs.
  std::string warning;
};

/// Reads the facts from /dev/kvm, /proc/cpuinfo and /sys/module.
HostFacts probeHost();

/// Picks the accelerator. `bootProbe` is asked only when the facts allow KVM
/// under kAuto; it returns whether a KVM guest really reached init (the
/// caller caches it). kKvm and kTcg force the choice.
AccelChoice chooseAccel(AccelRequest request, const HostFacts& facts, const std::function<bool()>& bootProbe);

/// The host's TSC frequency in kHz, from /proc/cpuinfo ("cpu MHz"); 0 if unknown.
unsigned hostTscKhz();

/// Parses "auto", "kvm" or "tcg".
bool parseAccel(const std::string& text, AccelRequest& out);

}  // namespace airlock::vm
