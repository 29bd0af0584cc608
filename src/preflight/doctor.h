#pragma once
// `airlock doctor`: checks that the host can run airlock and says what to do
// about each problem. Every host access goes through HostProbe, so tests can
// force each check to fail; the state and cache directories are read
// directly (tests point them at temporary directories).

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "vm/accel.h"

namespace airlock::preflight {

/// The host as the doctor sees it.
class HostProbe {
 public:
  virtual ~HostProbe() = default;
  /// /dev/kvm, vmx/svm, kvm_pvm (vm::probeHost()).
  virtual vm::HostFacts hostFacts() = 0;
  /// Full path of `name` on $PATH; empty when missing.
  virtual std::string findOnPath(const std::string& name) = 0;
  /// True when `path` is an executable file.
  virtual bool isExecutable(const std::string& path) = 0;
  /// Standard output of a command that exited 0.
  virtual Result<std::string> output(const std::vector<std::string>& argv) = 0;
  /// Contents of a small file (e.g. under /proc); nullopt when unreadable.
  virtual std::optional<std::string> readText(const std::string& path) = 0;
  /// Bytes available to airlock on the filesystem holding `path` (or its
  /// nearest existing ancestor).
  virtual Result<uint64_t> freeBytes(const std::string& path) = 0;
  /// The effective user id airlock runs as (geteuid()).
  virtual uid_t effectiveUid() = 0;
  /// The login name of effectiveUid() (for /etc/subuid lookups and fixes); empty when unknown.
  virtual std::string userName() = 0;
  /// 0 when airlock's user may access `path` with `mode` (access(2)'s
  /// R_OK|W_OK...), else the errno.
  virtual int accessError(const std::string& path, int mode) = 0;
};

/// The real host.
class SystemHostProbe : public HostProbe {
 public:
  vm::HostFacts hostFacts() override;
  std::string findOnPath(const std::string& name) override;
  bool isExecutable(const std::string& path) override;
  Result<std::string> output(const std::vector<std::string>& argv) override;
  std::optional<std::string> readText(const std::string& path) override;
  Result<uint64_t> freeBytes(const std::string& path) override;
  uid_t effectiveUid() override;
  std::string userName() override;
  int accessError(const std::string& path, int mode) override;
};

enum class CheckStatus { kOk, kWarn, kFail };

/// "ok", "warn", "fail".
const char* statusName(CheckStatus status);

/// The outcome of one check.
struct CheckResult {
  std::string name;    ///< e.g. "kvm", "qemu", "disk (cache)"
  CheckStatus status = CheckStatus::kOk;
  std::string detail;  ///< what was found
  std::string fix;     ///< what to do; empty when ok
};

/// Thresholds of the disk and cache checks.
struct DoctorLimits {
  uint64_t failFreeBytes = 1ull << 30;          ///< below: fail
  uint64_t warnFreeBytes = 5ull << 30;          ///< below: warn
  uint64_t warnImageCacheBytes = 20ull << 30;   ///< above: warn
};

/// Runs every check in order: kvm, qemu, microvm, virtiofsd, root, kernel
/// assets, mkfs.erofs, mkfs.ext4, mmdebstrap, user namespaces, tun, cgroup,
/// disk (cache), disk (state), stale sessions, stale flush journals, VM run
/// directories (what ended VMs left is removed), image cache;
/// as a user other than root also newuidmap, newgidmap, subuid and subgid
/// (what mmdebstrap --mode=unshare needs to build the base image).
std::vector<CheckResult> runDoctor(HostProbe& probe, const std::string& cacheDir, const std::string& stateDir,
                                   const DoctorLimits& limits = {});

/// Parses "QEMU emulator version 7.2.22 (...)" into "7.2.22"; empty when absent.
std::string parseQemuVersion(const std::string& versionOutput);

}  // namespace airlock::preflight
