#include "vm/guest_kernel.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include <sstream>
#include <unordered_set>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "vm/boot_assets.h"
#include "vm/guest_kernel_config.h"

namespace airlock::vm {
namespace {

/// Bump when the build steps or the layout of the built directory change.
constexpr std::string_view kFormat = "airlock-guest-kernel-1";

/// Build tools beyond make and a C compiler; the package that has each.
constexpr std::pair<const char*, const char*> kTools[] = {{"make", "make"},   {"gcc", "gcc"},   {"bc", "bc"},
                                                          {"bison", "bison"}, {"flex", "flex"}, {"tar", "tar"},
                                                          {"xz", "xz-utils"}};
constexpr const char* kPackages = "linux-source-6.1 make gcc bc bison flex libelf-dev libssl-dev xz-utils";

std::string lastLines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) out += "\n  " + lines[i];
  return out;
}

/// What identifies the source a kernel was built from: the tarball's path,
/// size and mtime (a new linux-source-6.1 from apt changes them). Empty when
/// the tarball is missing.
std::string sourceStamp(const std::string& tarball) {
  struct stat st {};
  if (::stat(tarball.c_str(), &st) != 0) return {};
  return fmt::format("{} {} {}", tarball, st.st_size, st.st_mtim.tv_sec);
}

/// Runs make in `tree`; a failure names the target and quotes the end of its output.
Result<std::string> make(const std::string& tree, std::vector<std::string> args, std::string_view what) {
  // Fixed on the command line, where they override the environment: a user's
  // ARCH, CROSS_COMPILE, KBUILD_OUTPUT (which would send the .config into their
  // own kernel tree), KCONFIG_CONFIG or LOCALVERSION must not change the build.
  std::vector<std::string> argv = {"make",
                                   "-C",
                                   tree,
                                   "ARCH=x86_64",
                                   "CROSS_COMPILE=",
                                   "KBUILD_OUTPUT=",
                                   "KCONFIG_CONFIG=.config",
                                   "LOCALVERSION=",
                                   "KBUILD_BUILD_USER=airlock",
                                   "KBUILD_BUILD_HOST=airlock",
                                   "KBUILD_BUILD_TIMESTAMP=1970-01-01"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = runCommand(argv);
  if (!out) return std::unexpected(out.error());
  if (out->exitCode != 0)
    return fail("{} failed (make exit {}):{}", what, out->exitCode,
                lastLines(out->stderrText.empty() ? out->stdoutText : out->stderrText, 8));
  return out->stdoutText;
}

Result<> checkPrerequisites(const GuestKernelBuild& build) {
  if (!pathExists(build.sourceTarball))
    return fail("the kernel source {} is not installed; run `sudo apt-get install {}` (or scripts/setup)",
                build.sourceTarball, kPackages);
  for (const auto& [tool, package] : kTools) {
    if (findProgram(tool).empty())
      return fail("{} is not installed (package {}); run `sudo apt-get install {}`", tool, package, kPackages);
  }
  if (!pathExists("/usr/include/gelf.h"))
    return fail("libelf's headers are not installed (package libelf-dev, for objtool); run `sudo apt-get install {}`",
                kPackages);
  return {};
}

/// The single directory the tarball unpacked into below `dir`.
Result<std::string> unpackedTree(const std::string& dir) {
  auto entries = listDir(dir);
  if (!entries) return std::unexpected(entries.error());
  if (entries->size() != 1)
    return fail("the kernel source unpacked into {} entries in {}, expected one directory", entries->size(), dir);
  return dir + "/" + entries->front();
}

Result<std::string> buildInto(const std::string& cacheDir, const std::string& finalDir, const GuestKernelBuild& build,
                              const ProgressFn& progress) {
  const std::string buildRoot = cacheDir + "/kernel-build";
  auto work = TempDir::create(buildRoot, "tmp-");
  if (!work) return std::unexpected(work.error());

  report(progress, fmt::format("unpacking {}", build.sourceTarball));
  std::string source = work->path() + "/source";
  if (auto r = makeDirs(source); !r) return std::unexpected(r.error());
  if (auto r = runChecked({"tar", "-xf", build.sourceTarball, "-C", source}); !r) return std::unexpected(r.error());
  auto tree = unpackedTree(source);
  if (!tree) return std::unexpected(tree.error());

  const std::string fragment = work->path() + "/guest.config";
  if (auto r = writeFileAtomic(fragment, guestKernelConfig()); !r) return std::unexpected(r.error());
  report(progress, "configuring: make allnoconfig with kernel/guest.config");
  if (auto r = make(*tree, {"-s", "allnoconfig", "KCONFIG_ALLCONFIG=" + fragment}, "make allnoconfig"); !r)
    return std::unexpected(r.error());
  auto dotConfig = readFile(*tree + "/.config");
  if (!dotConfig) return std::unexpected(dotConfig.error());
  if (auto dropped = droppedOptions(guestKernelConfig(), *dotConfig); !dropped.empty()) {
    std::string names;
    for (const auto& line : dropped) names += (names.empty() ? "" : ", ") + line;
    return fail("Kconfig dropped {} option(s) of kernel/guest.config (a dependency is off or the name is wrong): {}",
                dropped.size(), names);
  }

  report(progress, fmt::format("compiling the guest kernel with {} job(s) (several minutes)", build.jobs));
  if (auto r = make(*tree, {"-s", fmt::format("-j{}", build.jobs), "vmlinux"}, "compiling the guest kernel"); !r)
    return std::unexpected(r.error());
  auto release = make(*tree, {"-s", "kernelrelease"}, "make kernelrelease");
  if (!release) return std::unexpected(release.error());
  while (!release->empty() && (release->back() == '\n' || release->back() == ' ')) release->pop_back();

  std::string out = work->path() + "/kernel";
  if (auto r = makeDirs(out + "/modules"); !r) return std::unexpected(r.error());
  auto vmlinux = readFile(*tree + "/vmlinux", 256 << 20);
  if (!vmlinux) return std::unexpected(vmlinux.error());
  if (!isCompleteElf64(*vmlinux)) return fail("the built {}/vmlinux is not a complete ELF file", *tree);
  if (auto r = writeFileAtomic(out + "/vmlinux", *vmlinux); !r) return std::unexpected(r.error());
  if (auto r = writeFileAtomic(out + "/config", *dotConfig); !r) return std::unexpected(r.error());
  if (auto r = writeFileAtomic(out + "/release", *release + "\n"); !r) return std::unexpected(r.error());
  if (auto r = writeFileAtomic(out + "/modules/load-order", ""); !r) return std::unexpected(r.error());
  if (auto r = writeFileAtomic(out + "/source", sourceStamp(build.sourceTarball) + "\n"); !r)
    return std::unexpected(r.error());
  if (auto r = syncPath(out + "/modules"); !r) return std::unexpected(r.error());
  if (auto r = syncPath(out); !r) return std::unexpected(r.error());
  // A kernel already there (--force, or a new source) is swapped out in one
  // step, so a run that picked it finds a complete directory either way; the
  // old one ends up in `out` and goes with the work directory.
  const bool replace = pathExists(finalDir);
  int renamed = replace ? ::renameat2(AT_FDCWD, out.c_str(), AT_FDCWD, finalDir.c_str(), RENAME_EXCHANGE)
                        : ::rename(out.c_str(), finalDir.c_str());
  if (renamed != 0) return fail("cannot rename {} to {}: {}", out, finalDir, errnoText(errno));
  if (auto r = syncPath(bootAssetsDir(cacheDir)); !r) return std::unexpected(r.error());
  report(progress, fmt::format("guest kernel {} in {}", *release, finalDir));
  return finalDir;
}

}  // namespace

std::string_view guestKernelConfig() { return kGuestKernelConfig; }

std::string guestKernelDirName(std::string_view fragment) {
  return "guest-kernel-" + sha256Hex(fmt::format("{}\n{}", kFormat, fragment)).substr(0, 16);
}

std::vector<std::string> droppedOptions(std::string_view fragment, std::string_view dotConfig) {
  std::unordered_set<std::string> have;
  std::istringstream config{std::string(dotConfig)};
  for (std::string line; std::getline(config, line);) have.insert(line);
  std::vector<std::string> dropped;
  std::istringstream wanted{std::string(fragment)};
  for (std::string line; std::getline(wanted, line);) {
    if (!line.starts_with("CONFIG_")) continue;
    if (!have.contains(line)) dropped.push_back(line);
  }
  return dropped;
}

bool guestKernelSourceChanged(const std::string& kernelDir, const std::string& sourceTarball) {
  std::string now = sourceStamp(sourceTarball);
  if (now.empty()) return false;
  auto then = readFile(kernelDir + "/source", 4096);
  return then && *then != now + "\n";
}

std::optional<std::string> builtGuestKernel(const std::string& cacheDir) {
  std::string dir = bootAssetsDir(cacheDir) + "/" + guestKernelDirName(guestKernelConfig());
  if (pathExists(dir + "/vmlinux") && pathExists(dir + "/release") && pathExists(dir + "/modules/load-order"))
    return dir;
  return std::nullopt;
}

Result<std::string> buildGuestKernel(const std::string& cacheDir, const GuestKernelBuild& build,
                                     const ProgressFn& progress) {
  auto built = [&]() -> Result<std::string> {
    const std::string buildRoot = cacheDir + "/kernel-build";
    if (auto r = makeDirs(buildRoot); !r) return std::unexpected(r.error());
    if (auto r = makeDirs(bootAssetsDir(cacheDir)); !r) return std::unexpected(r.error());
    auto lock = FileLock::acquire(buildRoot + "/.lock", "building the guest kernel", progress);
    if (!lock) return std::unexpected(lock.error());
    if (auto r = removeStaleBuilds(buildRoot); !r) return std::unexpected(r.error());
    const std::string finalDir = bootAssetsDir(cacheDir) + "/" + guestKernelDirName(guestKernelConfig());
    if (auto dir = builtGuestKernel(cacheDir); dir && !build.force) {
      // Kept, also when the source is gone; rebuilt when apt brought a new one.
      if (!guestKernelSourceChanged(*dir, build.sourceTarball)) return *dir;
      report(progress, fmt::format("{} changed since the cached kernel was built; rebuilding", build.sourceTarball));
    }
    if (auto r = checkPrerequisites(build); !r) return std::unexpected(r.error());
    return buildInto(cacheDir, finalDir, build, progress);
  }();
  if (!built && built.error().code == Error{}.code) built.error().code = exit_code::kHostNotReady;
  return built;
}

}  // namespace airlock::vm
