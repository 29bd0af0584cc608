#pragma once
// Boot assets of the guest: an uncompressed vmlinux from Debian's
// linux-image-cloud-amd64 (booted through its PVH entry point) and an
// uncompressed newc initramfs holding airlock-init and the kernel modules it
// loads. Both are built once and cached under <cache> (HostDirs::cache):
//
//   downloads/<package>_<version>_<arch>.deb       the kernel package, kept for rebuilds
//   assets/kernel-package                          last `apt-cache` resolution of the package
//   assets/kernel-<key>/vmlinux                    key: package file, module list, format
//   assets/kernel-<key>/modules/<name>.ko          the module closure, uncompressed
//   assets/kernel-<key>/modules/load-order         module file names, dependencies first
//   assets/kernel-<key>/release                    the kernel release ("6.1.0-57-cloud-amd64")
//   assets/initramfs-<key>/initramfs.cpio          key: the above + airlock-init's SHA-256
//
// A new airlock-init therefore rebuilds only the initramfs (~10 ms), never the kernel.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file_lock.h"

namespace airlock::vm {

/// Paths of a ready-to-boot kernel and initramfs in the cache.
struct BootAssets {
  std::string kernel;         ///< uncompressed ELF vmlinux (PVH entry point)
  std::string initramfs;      ///< uncompressed newc cpio with /init and /lib/modules
  std::string kernelRelease;  ///< `uname -r` of that kernel, e.g. "6.1.0-57-cloud-amd64"
};

/// The kernel release a kernel directory of the cache records in its `release`
/// file ("6.1.0-57-cloud-amd64", "6.1.192-airlock"), without the newline;
/// nullopt when it cannot be read.
std::optional<std::string> kernelRelease(const std::string& kernelDir);

/// Ensures an uncompressed vmlinux and an initramfs exist in the cache (layout above),
/// building what is missing; safe when several airlock processes call it at once.
/// `initBinary` is the path of the static airlock-init executable (its SHA-256 is part
/// of the key). The first call downloads the kernel package with `apt-get download`
/// (~27 MB) and needs `apt-get update` to have run once; later calls cost ~2 ms
/// (stat of the apt lists, SHA-256 of airlock-init). Errors carry
/// exit_code::kHostNotReady and say which step failed and how to fix it.
/// `cacheDir` is airlock's cache directory (HostDirs::cache).
Result<BootAssets> ensureBootAssets(const std::string& cacheDir, const std::string& initBinary,
                                    const ProgressFn& progress);

/// Where the boot assets are cached: `cacheDir`/assets (the kernel package
/// download goes to `cacheDir`/downloads).
std::string bootAssetsDir(const std::string& cacheDir);

/// Names of the modules the guest loads, before dependency resolution. Built-in
/// drivers (ext4 in Debian's cloud kernel) are skipped.
const std::vector<std::string>& guestModules();

/// modules.dep as a map: module path relative to /lib/modules/<release>/
/// ("kernel/fs/erofs/erofs.ko") -> paths of the modules it depends on.
using ModuleDeps = std::map<std::string, std::vector<std::string>>;

/// Parses the text of a modules.dep file ("path: dep dep ..." per line).
/// Fails on a line without ':', naming the line number.
Result<ModuleDeps> parseModulesDep(std::string_view text);

/// Module names listed in a modules.builtin file (one path per line).
std::set<std::string> parseModulesBuiltin(std::string_view text);

/// The module name of a module path: basename without ".ko[.xz|.zst|.gz]",
/// with '-' read as '_' ("kernel/fs/fuse/virtiofs.ko" -> "virtiofs").
std::string moduleName(std::string_view path);

/// Module paths of the dependency closure of `names`, in load order (every module
/// after the modules it depends on; otherwise in the order of `names`).
/// Names in `builtin` are skipped; a name that is neither in `deps` nor built in fails.
Result<std::vector<std::string>> moduleLoadOrder(const ModuleDeps& deps, const std::set<std::string>& builtin,
                                                 const std::vector<std::string>& names);

/// Compression formats of kernel payloads and modules.
enum class Compression { kLz4Legacy, kGzip, kXz, kZstd };

/// A place in a kernel image where a compressed stream may start.
struct PayloadCandidate {
  Compression compression;
  size_t offset;  ///< bytes from the start of the image
};

/// Every offset of `image` holding the magic bytes of a supported compression
/// (lz4 legacy 02 21 4C 18, gzip 1F 8B 08, xz FD 37 7A 58 5A 00, zstd 28 B5 2F FD),
/// sorted by offset. Most are false positives; the payload is the first that
/// decompresses to a complete ELF file.
std::vector<PayloadCandidate> findPayloadCandidates(std::string_view image);

/// Decompresses the file at `path` with the host's lz4/gzip/xz/zstd tool and returns
/// its output. Trailing bytes after the stream (the size word a bzImage appends) are
/// ignored, so the tool's exit status is not checked: validate the output instead.
Result<std::string> decompressFile(Compression compression, const std::string& path);

/// True when `data` is a complete little-endian ELF64 file: its header, program
/// headers, segments and section headers all lie within `data`.
bool isCompleteElf64(std::string_view data);

/// Writes the uncompressed ELF kernel inside the bzImage `bzImage` to `vmlinux`.
/// Fails, naming the image, when no candidate payload decompresses to a complete ELF.
Result<> extractVmlinux(const std::string& bzImage, const std::string& vmlinux);

/// Writes an uncompressed newc cpio to `path`: /init (`initBinary`, 0755), the
/// directories /dev /proc /sys /tmp /run /mnt /newroot, the char devices
/// /dev/console (5,1) and /dev/null (1,3), each of `modulePaths` as
/// /lib/modules/<basename>, and /lib/modules/load-order listing those basenames
/// in the given order, one per line. Owners are root and times are zero, so the
/// same inputs give the same bytes.
Result<> writeInitramfs(const std::string& path, const std::string& initBinary,
                        const std::vector<std::string>& modulePaths);

}  // namespace airlock::vm
