#include "vm/boot_assets.h"

#include <archive.h>
#include <archive_entry.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "vm/guest_kernel.h"

namespace airlock::vm {
namespace {

/// Bump when the layout or contents of the built assets change.
constexpr std::string_view kFormatVersion = "airlock-boot-assets-1";
constexpr const char* kMetaPackage = "linux-image-cloud-amd64";
constexpr const char* kAptLists = "/var/lib/apt/lists";
constexpr const char* kAptUpdateHint = "run 'sudo apt-get update' once and retry";

/// The concrete kernel package that linux-image-cloud-amd64 points to.
struct KernelPackage {
  std::string name;      ///< "linux-image-6.1.0-57-cloud-amd64"
  std::string fileName;  ///< the file `apt-get download` writes
  std::string sha256;    ///< its SHA-256 according to the apt lists
};

std::string lastLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  auto nl = text.rfind('\n');
  if (nl != std::string::npos) text = text.substr(nl + 1);
  return text.empty() ? "(no output)" : text;
}

std::string baseName(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

/// "erofs.ko.xz" -> "erofs.ko"; the compression of the file, if any.
std::pair<std::string, std::optional<Compression>> splitModuleFile(std::string_view path) {
  std::string base = baseName(path);
  static const std::pair<std::string_view, Compression> kSuffixes[] = {
      {".xz", Compression::kXz}, {".zst", Compression::kZstd}, {".gz", Compression::kGzip}};
  for (const auto& [suffix, compression] : kSuffixes) {
    if (base.ends_with(suffix)) return {base.substr(0, base.size() - suffix.size()), compression};
  }
  return {base, std::nullopt};
}

Result<> writeFile(const std::string& path, std::string_view data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd || !writeAll(fd.get(), data)) return fail("cannot write {}: {}", path, errnoText(errno));
  return {};
}

Result<> renameInto(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return fail("cannot rename {} to {}: {}", from, to, errnoText(errno));
  return {};
}

/// Changes whenever `apt-get update` changes the package lists: names, sizes
/// and mtimes of the files in /var/lib/apt/lists.
std::string aptListsFingerprint() {
  Sha256 h;
  auto names = listDir(kAptLists);
  for (const auto& name : names.value_or(std::vector<std::string>{})) {
    struct stat st {};
    if (::lstat((std::string(kAptLists) + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    h.update(fmt::format("{}\n{}\n{}.{}\n", name, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec));
  }
  return h.hex();
}

/// The record of the last resolution: the lists fingerprint it was made with, and its result.
struct ResolvedPackage {
  std::string listsFingerprint;
  KernelPackage package;
};

std::optional<ResolvedPackage> readResolution(const std::string& path) {
  auto text = readFile(path, 4096);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  ResolvedPackage r;
  if (!std::getline(in, r.listsFingerprint) || !std::getline(in, r.package.name) ||
      !std::getline(in, r.package.fileName) || !std::getline(in, r.package.sha256) || r.package.sha256.size() != 64)
    return std::nullopt;
  return r;
}

/// Asks apt which package linux-image-cloud-amd64 depends on and which file and
/// SHA-256 `apt-get download` would fetch for it (~1.7 s: apt-cache rebuilds its cache).
/// `emptyDir` must be empty: `--print-uris` prints nothing for a file already present.
Result<KernelPackage> queryKernelPackage(const std::string& emptyDir) {
  auto deps = runCommand({"apt-cache", "depends", kMetaPackage});
  if (!deps) return std::unexpected(deps.error());
  KernelPackage pkg;
  std::istringstream lines(deps->stdoutText);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string field, target;
    if (words >> field >> target && field == "Depends:" && target.starts_with("linux-image-")) {
      pkg.name = target;
      break;
    }
  }
  if (deps->exitCode != 0 || pkg.name.empty())
    return fail("apt-cache knows no kernel package behind {} ({}); {}", kMetaPackage, lastLine(deps->stderrText),
                kAptUpdateHint);
  auto uris = runCommand({"apt-get", "download", "--print-uris", pkg.name}, emptyDir);
  if (!uris) return std::unexpected(uris.error());
  // One line: 'URL' FILENAME SIZE SHA256:HEX
  std::istringstream words(uris->stdoutText);
  std::string url, size, hash;
  if (uris->exitCode != 0 || !(words >> url >> pkg.fileName >> size >> hash) || !hash.starts_with("SHA256:"))
    return fail("apt-get cannot locate kernel package {} ({}); {}", pkg.name, lastLine(uris->stderrText),
                kAptUpdateHint);
  pkg.sha256 = hash.substr(7);
  return pkg;
}

std::string resolutionPath(const std::string& assetsDir) { return assetsDir + "/kernel-package"; }

/// The kernel package from the resolution record, when the apt lists have not
/// changed since it was written.
std::optional<KernelPackage> recordedKernelPackage(const std::string& assetsDir) {
  auto record = readResolution(resolutionPath(assetsDir));
  if (record && record->listsFingerprint == aptListsFingerprint()) return record->package;
  return std::nullopt;
}

/// Resolves the kernel package with apt and rewrites the record; call with the
/// assets lock held. When apt cannot answer (lists deleted, say) but an older
/// record exists, that record's package is used.
Result<KernelPackage> resolveKernelPackage(const std::string& assetsDir, const ProgressFn& progress) {
  if (auto pkg = recordedKernelPackage(assetsDir)) return *pkg;
  std::string fingerprint = aptListsFingerprint();
  auto record = readResolution(resolutionPath(assetsDir));
  report(progress, fmt::format("resolving {} with apt-cache", kMetaPackage));
  auto scratch = TempDir::create(assetsDir, "tmp-");
  if (!scratch) return std::unexpected(scratch.error());
  auto pkg = queryKernelPackage(scratch->path());
  if (!pkg) {
    if (!record) return std::unexpected(pkg.error());
    report(progress, fmt::format("{}; using the previously resolved {}", pkg.error().message, record->package.name));
    return record->package;
  }
  auto written = writeFileAtomic(resolutionPath(assetsDir),
                                 fmt::format("{}\n{}\n{}\n{}\n", fingerprint, pkg->name, pkg->fileName, pkg->sha256));
  if (!written) return std::unexpected(written.error());
  return *pkg;
}

/// Path of the kernel package in `cacheDir`/downloads, downloading it when it
/// is missing or does not have the SHA-256 apt expects.
Result<std::string> ensureKernelPackageFile(const std::string& cacheDir, const KernelPackage& pkg,
                                            const ProgressFn& progress) {
  std::string downloads = cacheDir + "/downloads";
  if (auto r = makeDirs(downloads); !r) return std::unexpected(r.error());
  if (auto r = removeStaleBuilds(downloads); !r) return std::unexpected(r.error());
  std::string path = downloads + "/" + pkg.fileName;
  if (pathExists(path)) {
    auto sha = sha256File(path);
    if (sha && *sha == pkg.sha256) return path;
    report(progress, fmt::format("cached {} is damaged; downloading it again", path));
  }
  auto tmp = TempDir::create(downloads, "tmp-");
  if (!tmp) return std::unexpected(tmp.error());
  report(progress, fmt::format("downloading kernel package {} with apt-get", pkg.name));
  auto out = runCommand({"apt-get", "download", pkg.name}, tmp->path());
  if (!out) return std::unexpected(out.error());
  if (out->exitCode != 0)
    return fail("cannot download kernel package {} ({}); {}", pkg.name, lastLine(out->stderrText), kAptUpdateHint);
  std::string downloaded = tmp->path() + "/" + pkg.fileName;
  auto sha = sha256File(downloaded);
  if (!sha) return fail("apt-get download wrote no {}: {}", pkg.fileName, sha.error().message);
  if (*sha != pkg.sha256)
    return fail("downloaded {} has SHA-256 {}, apt lists expect {}; {}", pkg.fileName, *sha, pkg.sha256,
                kAptUpdateHint);
  if (auto r = syncPath(downloaded); !r) return std::unexpected(r.error());
  if (auto r = renameInto(downloaded, path); !r) return std::unexpected(r.error());
  return path;
}

/// Extracts the kernel package into `work`/root and writes the vmlinux, the module
/// closure, load-order and release into `kernelDir` (via `work`/kernel and a rename).
Result<> buildKernelDir(const std::string& deb, const std::string& work, const std::string& kernelDir,
                        const ProgressFn& progress) {
  std::string root = work + "/root";
  report(progress, fmt::format("extracting {}", baseName(deb)));
  if (auto r = runChecked({"dpkg-deb", "-x", deb, root}); !r) return std::unexpected(r.error());
  auto releases = listDir(root + "/lib/modules");
  if (!releases) return std::unexpected(releases.error());
  if (releases->size() != 1)
    return fail("kernel package {} holds {} module trees in /lib/modules, expected one", baseName(deb),
                releases->size());
  const std::string release = releases->front();
  std::string out = work + "/kernel";
  if (auto r = makeDirs(out + "/modules"); !r) return r;

  report(progress, fmt::format("decompressing kernel {}", release));
  if (auto r = extractVmlinux(root + "/boot/vmlinuz-" + release, out + "/vmlinux"); !r) return r;

  report(progress, "resolving module dependencies with depmod");
  if (auto r = runChecked({"depmod", "-b", root, release}); !r) return std::unexpected(r.error());
  std::string moduleRoot = root + "/lib/modules/" + release;
  auto depText = readFile(moduleRoot + "/modules.dep");
  if (!depText) return std::unexpected(depText.error());
  auto deps = parseModulesDep(*depText);
  if (!deps) return std::unexpected(deps.error());
  auto builtinText = readFile(moduleRoot + "/modules.builtin");
  if (!builtinText) return std::unexpected(builtinText.error());
  auto order = moduleLoadOrder(*deps, parseModulesBuiltin(*builtinText), guestModules());
  if (!order) return std::unexpected(order.error());

  std::string loadOrder;
  for (const auto& modulePath : *order) {
    std::string source = moduleRoot + "/" + modulePath;
    auto [fileName, compression] = splitModuleFile(modulePath);
    auto data = compression ? decompressFile(*compression, source) : readFile(source);
    if (!data) return std::unexpected(data.error());
    if (!isCompleteElf64(*data)) return fail("module {} is not a complete ELF file after decompression", source);
    if (auto r = writeFileAtomic(out + "/modules/" + fileName, *data); !r) return r;
    loadOrder += fileName + "\n";
  }
  if (auto r = writeFileAtomic(out + "/modules/load-order", loadOrder); !r) return r;
  if (auto r = writeFileAtomic(out + "/release", release + "\n"); !r) return r;
  if (auto r = syncPath(out + "/modules"); !r) return r;
  if (auto r = syncPath(out); !r) return r;
  return renameInto(out, kernelDir);
}

/// Writes initramfs.cpio from airlock-init and the modules of `kernelDir` into
/// `initramfsDir` (via `work`/initramfs and a rename).
Result<> buildInitramfsDir(const std::string& kernelDir, const std::string& initBinary, const std::string& work,
                           const std::string& initramfsDir, const ProgressFn& progress) {
  auto order = readFile(kernelDir + "/modules/load-order");
  if (!order) return std::unexpected(order.error());
  std::vector<std::string> modulePaths;
  std::istringstream lines(*order);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) modulePaths.push_back(kernelDir + "/modules/" + line);
  }
  std::string out = work + "/initramfs";
  if (auto r = makeDirs(out); !r) return r;
  report(progress, fmt::format("writing initramfs with {} and {} modules", initBinary, modulePaths.size()));
  if (auto r = writeInitramfs(out + "/initramfs.cpio", initBinary, modulePaths); !r) return r;
  if (auto r = syncPath(out); !r) return r;
  return renameInto(out, initramfsDir);
}

/// Returns the assets when both the kernel and the initramfs directory are complete.
std::optional<BootAssets> readyAssets(const std::string& kernelDir, const std::string& initramfsDir) {
  if (!pathExists(kernelDir) || !pathExists(initramfsDir)) return std::nullopt;
  auto release = kernelRelease(kernelDir);
  if (!release) return std::nullopt;
  return BootAssets{kernelDir + "/vmlinux", initramfsDir + "/initramfs.cpio", *release};
}

using ArchivePtr = std::unique_ptr<archive, decltype(&archive_write_free)>;
using EntryPtr = std::unique_ptr<archive_entry, decltype(&archive_entry_free)>;

/// Appends one entry to a cpio being written; `data` only for regular files.
struct CpioWriter {
  archive* a;
  const std::string& path;
  unsigned nextInode = 1;

  Result<> add(const std::string& name, mode_t type, mode_t perm, std::string_view data = {}, unsigned devMajor = 0,
               unsigned devMinor = 0) {
    EntryPtr e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), type);
    archive_entry_set_perm(e.get(), perm);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    archive_entry_set_mtime(e.get(), 0, 0);
    archive_entry_set_ino(e.get(), nextInode++);
    archive_entry_set_nlink(e.get(), type == AE_IFDIR ? 2 : 1);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(data.size()));
    if (type == AE_IFCHR) {
      archive_entry_set_rdevmajor(e.get(), devMajor);
      archive_entry_set_rdevminor(e.get(), devMinor);
    }
    if (archive_write_header(a, e.get()) != ARCHIVE_OK) return error(name);
    if (!data.empty() && archive_write_data(a, data.data(), data.size()) != static_cast<la_ssize_t>(data.size()))
      return error(name);
    return {};
  }

  std::unexpected<Error> error(const std::string& name) const {
    const char* why = archive_error_string(a);
    return fail("cannot write {} into initramfs {}: {}", name, path, why ? why : "unknown libarchive error");
  }
};

}  // namespace

const std::vector<std::string>& guestModules() {
  static const std::vector<std::string> kModules = {"virtio_mmio", "virtio_blk", "virtio_console", "virtio_net",
                                                    "virtiofs",    "erofs",      "overlay",        "ext4",
                                                    "virtio_balloon"};
  return kModules;
}

Result<ModuleDeps> parseModulesDep(std::string_view text) {
  ModuleDeps deps;
  std::istringstream lines{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.empty() || line.starts_with('#')) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) return fail("modules.dep line {} has no ':': {}", number, line);
    std::vector<std::string>& list = deps[line.substr(0, colon)];
    std::istringstream words(line.substr(colon + 1));
    for (std::string word; words >> word;) list.push_back(word);
  }
  return deps;
}

std::set<std::string> parseModulesBuiltin(std::string_view text) {
  std::set<std::string> names;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) names.insert(moduleName(line));
  }
  return names;
}

std::string moduleName(std::string_view path) {
  std::string name = splitModuleFile(path).first;
  if (name.ends_with(".ko")) name.resize(name.size() - 3);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

Result<std::vector<std::string>> moduleLoadOrder(const ModuleDeps& deps, const std::set<std::string>& builtin,
                                                 const std::vector<std::string>& names) {
  std::map<std::string, std::string> pathByName;
  for (const auto& [path, _] : deps) pathByName[moduleName(path)] = path;

  std::vector<std::string> order;
  std::set<std::string> done, visiting;
  // Depth-first, dependencies before dependents. modules.dep lists a module's
  // dependencies so that loading them right to left works, like modprobe does.
  std::function<Result<>(const std::string&)> visit = [&](const std::string& path) -> Result<> {
    if (done.contains(path)) return {};
    if (!visiting.insert(path).second) return fail("modules.dep has a dependency cycle through {}", path);
    const auto& list = deps.at(path);
    for (auto dep = list.rbegin(); dep != list.rend(); ++dep) {
      if (!deps.contains(*dep))
        return fail("modules.dep lists {} as a dependency of {} but has no entry for it", *dep, path);
      if (auto r = visit(*dep); !r) return r;
    }
    visiting.erase(path);
    done.insert(path);
    order.push_back(path);
    return {};
  };
  for (const auto& name : names) {
    std::string key = moduleName(name);
    if (builtin.contains(key)) continue;
    auto it = pathByName.find(key);
    if (it == pathByName.end()) return fail("kernel module {} is neither in modules.dep nor built in", name);
    if (auto r = visit(it->second); !r) return std::unexpected(r.error());
  }
  return order;
}

std::vector<PayloadCandidate> findPayloadCandidates(std::string_view image) {
  static const std::pair<std::string_view, Compression> kMagics[] = {
      {std::string_view("\x02\x21\x4c\x18", 4), Compression::kLz4Legacy},
      {std::string_view("\x1f\x8b\x08", 3), Compression::kGzip},
      {std::string_view("\xfd\x37\x7a\x58\x5a\x00", 6), Compression::kXz},
      {std::string_view("\x28\xb5\x2f\xfd", 4), Compression::kZstd},
  };
  std::vector<PayloadCandidate> found;
  for (const auto& [magic, compression] : kMagics) {
    for (size_t at = image.find(magic); at != std::string_view::npos; at = image.find(magic, at + 1))
      found.push_back({compression, at});
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  return found;
}

Result<std::string> decompressFile(Compression compression, const std::string& path) {
  std::vector<std::string> argv;
  switch (compression) {
    case Compression::kLz4Legacy: argv = {"lz4", "-dc", path}; break;
    case Compression::kGzip: argv = {"gzip", "-dc", path}; break;
    case Compression::kXz: argv = {"xz", "-dc", "--single-stream", path}; break;
    case Compression::kZstd: argv = {"zstd", "-dc", "--no-progress", path}; break;
  }
  auto out = runCommand(argv);
  if (!out) return std::unexpected(out.error());
  return std::move(out->stdoutText);
}

bool isCompleteElf64(std::string_view data) {
  Elf64_Ehdr eh;
  if (data.size() < sizeof eh) return false;
  std::memcpy(&eh, data.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return false;
  const uint64_t size = data.size();
  auto within = [size](uint64_t offset, uint64_t length) { return offset <= size && length <= size - offset; };
  if (eh.e_phnum != 0) {
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || !within(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr)))
      return false;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      std::memcpy(&ph, data.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
      if (!within(ph.p_offset, ph.p_filesz)) return false;
    }
  }
  if (eh.e_shoff != 0) {
    // e_shnum 0 with a section header table means the count is in section 0.
    uint64_t count = eh.e_shnum == 0 ? 1 : eh.e_shnum;
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || !within(eh.e_shoff, count * sizeof(Elf64_Shdr))) return false;
  }
  return true;
}

Result<> extractVmlinux(const std::string& bzImage, const std::string& vmlinux) {
  auto image = readFile(bzImage, 256 << 20);
  if (!image) return std::unexpected(image.error());
  auto candidates = findPayloadCandidates(*image);
  std::string payload = vmlinux + ".payload";
  for (const auto& candidate : candidates) {
    if (auto r = writeFile(payload, std::string_view(*image).substr(candidate.offset)); !r) return r;
    auto out = decompressFile(candidate.compression, payload);
    ::unlink(payload.c_str());
    if (!out) return std::unexpected(out.error());
    if (isCompleteElf64(*out)) return writeFileAtomic(vmlinux, *out);
  }
  return fail(
      "cannot find the kernel in {}: none of its {} lz4/gzip/xz/zstd candidate streams decompresses to a "
      "complete ELF vmlinux; is it an x86-64 bzImage?",
      bzImage, candidates.size());
}

Result<> writeInitramfs(const std::string& path, const std::string& initBinary,
                        const std::vector<std::string>& modulePaths) {
  auto init = readFile(initBinary, 256 << 20);
  if (!init) return fail("cannot read airlock-init: {}", init.error().message);
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return fail("cannot write initramfs {}: {}", path, errnoText(errno));
  ArchivePtr a(archive_write_new(), archive_write_free);
  CpioWriter cpio{a.get(), path};
  if (archive_write_set_format_cpio_newc(a.get()) != ARCHIVE_OK ||
      archive_write_add_filter_none(a.get()) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(a.get(), 1) != ARCHIVE_OK ||
      archive_write_open_fd(a.get(), fd.get()) != ARCHIVE_OK)
    return cpio.error("the header");

  for (const char* dir : {"dev", "proc", "sys", "run", "mnt", "newroot", "lib", "lib/modules"}) {
    if (auto r = cpio.add(dir, AE_IFDIR, 0755); !r) return r;
  }
  if (auto r = cpio.add("tmp", AE_IFDIR, 01777); !r) return r;
  if (auto r = cpio.add("dev/console", AE_IFCHR, 0600, {}, 5, 1); !r) return r;
  if (auto r = cpio.add("dev/null", AE_IFCHR, 0666, {}, 1, 3); !r) return r;
  if (auto r = cpio.add("init", AE_IFREG, 0755, *init); !r) return r;

  std::string loadOrder;
  std::set<std::string> seen;
  for (const auto& modulePath : modulePaths) {
    std::string name = baseName(modulePath);
    if (!seen.insert(name).second) return fail("two modules named {} for initramfs {}", name, path);
    auto data = readFile(modulePath);
    if (!data) return std::unexpected(data.error());
    if (auto r = cpio.add("lib/modules/" + name, AE_IFREG, 0644, *data); !r) return r;
    loadOrder += name + "\n";
  }
  if (auto r = cpio.add("lib/modules/load-order", AE_IFREG, 0644, loadOrder); !r) return r;
  if (archive_write_close(a.get()) != ARCHIVE_OK) return cpio.error("the trailer");
  if (::fsync(fd.get()) != 0) return fail("cannot write initramfs {}: {}", path, errnoText(errno));
  return {};
}

namespace {

/// Builds `initramfsDir` for the kernel in `kernelDir` unless it exists; call
/// with the assets lock held.
Result<> ensureInitramfsDir(const std::string& kernelDir, const std::string& initBinary, const std::string& assetsDir,
                            const std::string& initramfsDir, const ProgressFn& progress) {
  if (pathExists(initramfsDir)) return {};
  auto work = TempDir::create(assetsDir, "tmp-");
  if (!work) return std::unexpected(work.error());
  if (auto r = buildInitramfsDir(kernelDir, initBinary, work->path(), initramfsDir, progress); !r) return r;
  return syncPath(assetsDir);
}

Result<BootAssets> findOrBuildBootAssets(const std::string& cacheDir, const std::string& initBinary,
                                         const ProgressFn& progress) {
  auto initSha = sha256File(initBinary);
  if (!initSha) return fail("cannot read airlock-init ({}); build airlock with scripts/build", initSha.error().message);
  const std::string assetsDir = bootAssetsDir(cacheDir);
  if (auto r = makeDirs(assetsDir); !r) return std::unexpected(r.error());

  std::optional<FileLock> lock;
  auto takeLock = [&]() -> Result<> {
    if (lock) return {};
    auto l = FileLock::acquire(assetsDir + "/.lock", "boot assets", progress);
    if (!l) return std::unexpected(l.error());
    lock.emplace(std::move(*l));
    return removeStaleBuilds(assetsDir);
  };

  // airlock's own kernel when `airlock system kernel build` made it: no modules.
  if (auto own = builtGuestKernel(cacheDir)) {
    const std::string initramfsKey = sha256Hex(fmt::format("{}\n{}\n{}\n", kFormatVersion, baseName(*own), *initSha));
    const std::string initramfsDir = assetsDir + "/initramfs-" + initramfsKey.substr(0, 16);
    if (auto ready = readyAssets(*own, initramfsDir)) return *ready;
    if (auto r = takeLock(); !r) return std::unexpected(r.error());
    if (auto r = ensureInitramfsDir(*own, initBinary, assetsDir, initramfsDir, progress); !r)
      return std::unexpected(r.error());
    if (auto ready = readyAssets(*own, initramfsDir)) return *ready;
    return fail("boot assets in {} are incomplete after building them; remove {} and retry", assetsDir, initramfsDir);
  }

  std::optional<KernelPackage> pkg = recordedKernelPackage(assetsDir);
  if (!pkg) {
    if (auto r = takeLock(); !r) return std::unexpected(r.error());
    auto resolved = resolveKernelPackage(assetsDir, progress);
    if (!resolved) return std::unexpected(resolved.error());
    pkg = *resolved;
  }

  std::string modules;
  for (const auto& m : guestModules()) modules += m + ",";
  const std::string kernelKey = sha256Hex(fmt::format("{}\n{}\n{}\n", kFormatVersion, pkg->fileName, modules));
  const std::string kernelDir = assetsDir + "/kernel-" + kernelKey.substr(0, 16);
  const std::string initramfsKey = sha256Hex(fmt::format("{}\n{}\n{}\n", kFormatVersion, kernelKey, *initSha));
  const std::string initramfsDir = assetsDir + "/initramfs-" + initramfsKey.substr(0, 16);
  if (auto ready = readyAssets(kernelDir, initramfsDir)) return *ready;

  if (auto r = takeLock(); !r) return std::unexpected(r.error());
  if (!pathExists(kernelDir)) {
    auto deb = ensureKernelPackageFile(cacheDir, *pkg, progress);
    if (!deb) return std::unexpected(deb.error());
    auto work = TempDir::create(assetsDir, "tmp-");
    if (!work) return std::unexpected(work.error());
    if (auto r = buildKernelDir(*deb, work->path(), kernelDir, progress); !r) return std::unexpected(r.error());
  }
  if (auto r = ensureInitramfsDir(kernelDir, initBinary, assetsDir, initramfsDir, progress); !r)
    return std::unexpected(r.error());
  if (auto ready = readyAssets(kernelDir, initramfsDir)) return *ready;
  return fail("boot assets in {} are incomplete after building them; remove {} and retry", assetsDir, kernelDir);
}

}  // namespace

std::optional<std::string> kernelRelease(const std::string& kernelDir) {
  auto release = readFile(kernelDir + "/release", 256);
  if (!release) return std::nullopt;
  while (!release->empty() && (release->back() == '\n' || release->back() == ' ')) release->pop_back();
  return *release;
}

std::string bootAssetsDir(const std::string& cacheDir) { return cacheDir + "/assets"; }

Result<BootAssets> ensureBootAssets(const std::string& cacheDir, const std::string& initBinary,
                                    const ProgressFn& progress) {
  auto assets = findOrBuildBootAssets(cacheDir, initBinary, progress);
  if (!assets && assets.error().code == Error{}.code) assets.error().code = exit_code::kHostNotReady;
  return assets;
}

}  // namespace airlock::vm
