#pragma once
// airlock's own guest kernel: Linux from Debian's linux-source-6.1 package,
// configured by `make allnoconfig` plus the fragment kernel/guest.config (built
// into airlock), everything built in, booted as an uncompressed vmlinux
// through its PVH entry point. `airlock system kernel build` (and so
// scripts/build) builds it once into the cache:
//
//   assets/guest-kernel-<key>/vmlinux              key: the fragment and kFormat
//   assets/guest-kernel-<key>/release              `make kernelrelease` ("6.1.158-airlock")
//   assets/guest-kernel-<key>/config               the whole .config it was built with
//   assets/guest-kernel-<key>/modules/load-order   empty: nothing to load
//   assets/guest-kernel-<key>/source               the tarball it was built from: path, size, mtime
//
// When it is there, ensureBootAssets boots it; otherwise Debian's cloud
// kernel and its modules (vm/boot_assets.h) remain the fallback.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file_lock.h"

namespace airlock::vm {

/// Where Debian's linux-source-6.1 package puts the kernel source.
inline constexpr const char* kKernelSourceTarball = "/usr/src/linux-source-6.1.tar.xz";

/// The Kconfig fragment of the guest kernel (kernel/guest.config), as built into airlock.
std::string_view guestKernelConfig();

/// The cache directory name of the kernel `fragment` builds: "guest-kernel-" and
/// 16 hex digits of a SHA-256 over the fragment and the build's format version.
std::string guestKernelDirName(std::string_view fragment);

/// The option lines of `fragment` ("CONFIG_X=value") that `dotConfig` (a .config
/// written by Kconfig) does not hold verbatim: options Kconfig dropped because a
/// dependency is off, or misspelt ones. Comments and blank lines are skipped.
std::vector<std::string> droppedOptions(std::string_view fragment, std::string_view dotConfig);

/// The built guest kernel's directory in `cacheDir` (layout above), when a
/// complete one exists for the built-in fragment.
std::optional<std::string> builtGuestKernel(const std::string& cacheDir);

/// True when `sourceTarball` exists and is not the one the kernel in
/// `kernelDir` was built from according to its `source` record (apt installed
/// a newer linux-source-6.1 since): `airlock system kernel build` then
/// rebuilds it. False without a record to compare against.
bool guestKernelSourceChanged(const std::string& kernelDir, const std::string& sourceTarball);

/// What `airlock system kernel build` asks for.
struct GuestKernelBuild {
  std::string sourceTarball = kKernelSourceTarball;
  unsigned jobs = 1;   ///< make -j
  bool force = false;  ///< rebuild even when a built kernel is cached
};

/// Builds the guest kernel into the cache (layout above) unless it is there
/// already, from the same source or with the source gone (then returns at once,
/// unless `build.force`), and returns its directory. Extracts the tarball
/// (~1.5 GB) into `<cacheDir>`/kernel-build/tmp-XXXXXX, runs `make allnoconfig`
/// with the fragment, fails (naming them) when Kconfig dropped an option the
/// fragment sets, then `make vmlinux` (about 5 minutes on 2 cores); a kernel
/// already cached is swapped for the new one atomically. Holds
/// `<cacheDir>`/kernel-build/.lock throughout (one build at a time; runs are
/// not blocked). Errors carry exit_code::kHostNotReady and name the missing
/// package or tool.
Result<std::string> buildGuestKernel(const std::string& cacheDir, const GuestKernelBuild& build,
                                     const ProgressFn& progress);

}  // namespace airlock::vm
