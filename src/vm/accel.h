#pragma once
// Choosing the accelerator: KVM when it is really usable, QEMU's TCG
// emulation otherwise. "Usable" is more than /dev/kvm existing: kvm_pvm
// (software nested virtualization, no VT-x/AMD-V) provides /dev/kvm but
// cannot run stock guest kernels.

#include <functional>
#include <string>

#include "common/error.h"
#include "vm/vm_config.h"

namespace airlock::vm {

enum class AccelRequest { kAuto, kKvm, kTcg };

/// What the host offers, gathered by probeHost() or set by a test.
struct HostFacts {
  bool kvmDeviceUsable = false;  ///< /dev/kvm opens read-write
  bool cpuHasVirt = false;       ///< vmx or svm in /proc/cpuinfo flags
  bool kvmPvmLoaded = false;     ///< /sys/module/kvm_pvm exists
  /// Why /dev/kvm did not open (errno: ENOENT no KVM, EACCES not in its group); 0 when it did.
  /// EPERM: airlock runs as root but /dev/kvm is not read-write for a group
  /// other than root, so QEMU's unprivileged jail uid could not open it
  /// (forJailedQemu).
  int kvmOpenError = 0;
};

/// `facts` as QEMU's jail uid sees them when airlock runs as root: /dev/kvm
/// counts only when its mode gives a group other than root read-write
/// access (QEMU gets that group, never group 0).
HostFacts forJailedQemu(HostFacts facts);

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

/// Why the facts rule KVM out ("/dev/kvm is kvm_pvm ..."), or "" when they
/// allow it (a test boot may still fail).
std::string kvmUnusableReason(const HostFacts& facts);

/// Refuses `--accel kvm` at once (kHostNotReady, with the reason and the fix)
/// when the facts rule KVM out, instead of a boot that can only time out.
Result<> checkAccelRequest(AccelRequest request, const HostFacts& facts);

/// The host's TSC frequency in kHz, from /proc/cpuinfo ("cpu MHz"); 0 if unknown.
unsigned hostTscKhz();

/// Parses "auto", "kvm" or "tcg".
bool parseAccel(const std::string& text, AccelRequest& out);

}  // namespace airlock::vm
