#include "image/base_rootfs.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include <fmt/ranges.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/subordinate_ids.h"
#include "common/subprocess.h"
#include "image/apt_mirror.h"

namespace airlock::image {
namespace {

/// Bump when the way the base is built changes (options, variant, layout).
constexpr std::string_view kBaseFormat = "airlock-base-1";
constexpr std::string_view kVariant = "minbase";

/// The lines of mmdebstrap's output that say what failed (E:, then W:), at most four.
std::string mmdebstrapErrors(const std::string& output) {
  std::vector<std::string> picked;
  for (const char* prefix : {"E: ", "W: "}) {
    size_t at = 0;
    while (at < output.size() && picked.size() < 4) {
      size_t end = output.find('\n', at);
      if (end == std::string::npos) end = output.size();
      std::string line = output.substr(at, end - at);
      if (line.starts_with(prefix)) picked.push_back(line);
      at = end + 1;
    }
    if (!picked.empty()) break;
  }
  if (picked.empty()) {
    size_t last = output.find_last_not_of('\n');
    if (last == std::string::npos) return "no output";
    size_t start = output.rfind('\n', last);
    return output.substr(start == std::string::npos ? 0 : start + 1, last + 1);
  }
  return fmt::format("{}", fmt::join(picked, " | "));
}

}  // namespace

std::vector<std::string> unprivilegedBuildProblems(const std::string& user, uid_t uid, bool hasNewuidmap,
                                                   bool hasNewgidmap, const std::string& subuidText,
                                                   const std::string& subgidText) {
  std::vector<std::string> problems;
  if (!hasNewuidmap || !hasNewgidmap)
    problems.push_back("newuidmap and newgidmap are missing: sudo apt-get install uidmap (scripts/setup installs it)");
  const std::string who = user.empty() ? std::to_string(uid) : user;
  const uint64_t free = firstFreeSubordinateId({&subuidText, &subgidText});
  for (const auto& [file, text, flag] : {std::tuple{"/etc/subuid", &subuidText, "--add-subuids"},
                                         std::tuple{"/etc/subgid", &subgidText, "--add-subgids"}})
    if (!findSubordinateRange(*text, user, uid, 65536))
      problems.push_back(fmt::format("{} has no range of 65536 ids in {}: sudo usermod {} {}-{} {} (a range no "
                                     "other user has; or run scripts/setup as {})",
                                     who, file, flag, free, free + 65535, who, who));
  return problems;
}

const std::vector<std::string>& basePackages() {
  // openssh-client: git over SSH (--git-ssh-agent).
  static const std::vector<std::string> packages = {"ca-certificates", "git",     "bash",   "coreutils", "findutils",
                                                    "grep",            "sed",     "less",   "curl",      "ripgrep",
                                                    "procps",          "passwd",  "openssh-client"};
  return packages;
}

std::string baseDigest(const std::vector<std::string>& extraPackages) {
  Sha256 h;
  for (std::string_view part : {kBaseFormat, kDebianSuite, kVariant}) {
    h.update(fmt::format("{}:{}\n", part.size(), part));
  }
  for (const auto& p : basePackages()) h.update(fmt::format("{}:{}\n", p.size(), p));
  // Only when there are any: the common base keeps its digest.
  for (const auto& p : extraPackages) h.update(fmt::format("extra {}:{}\n", p.size(), p));
  return h.hex();
}

std::string baseTarballPath(const std::string& imagesDir, const std::vector<std::string>& extraPackages) {
  return imagesDir + "/base-" + baseDigest(extraPackages) + ".tar";
}

Result<std::string> ensureBaseTarball(const std::string& imagesDir, const std::vector<std::string>& extraPackages,
                                      const ProgressFn& progress) {
  const std::string tarball = baseTarballPath(imagesDir, extraPackages);
  if (pathExists(tarball)) return tarball;
  if (findProgram("mmdebstrap").empty())
    return failWith(exit_code::kHostNotReady,
                    "mmdebstrap is not installed; it builds the Debian base of agent images: run scripts/setup "
                    "(or apt-get install mmdebstrap)");
  if (::geteuid() != 0) {
    // mmdebstrap --mode=unshare fails late and obscurely without these.
    passwd* pw = ::getpwuid(::geteuid());
    auto subuid = readFile("/etc/subuid", 1 << 20), subgid = readFile("/etc/subgid", 1 << 20);
    auto problems = unprivilegedBuildProblems(pw ? pw->pw_name : "", ::geteuid(), !findProgram("newuidmap").empty(),
                                              !findProgram("newgidmap").empty(), subuid ? *subuid : "",
                                              subgid ? *subgid : "");
    if (!problems.empty())
      return failWith(exit_code::kHostNotReady, "cannot build the base image as a user other than root: {}",
                      fmt::join(problems, "; "));
  }
  auto work = TempDir::create(imagesDir, "tmp-");
  if (!work) return std::unexpected(work.error());
  const std::string built = work->path() + "/base.tar";
  auto sources = debianSourceLines(hostAptSources(), kDebianSuite);
  const std::string mirror = sources.front().substr(4, sources.front().find(' ', 4) - 4);
  std::vector<std::string> packages = basePackages();
  packages.insert(packages.end(), extraPackages.begin(), extraPackages.end());
  report(progress, extraPackages.empty()
                       ? fmt::format("bootstrapping the Debian 12 base rootfs with mmdebstrap from {} (once for all "
                                     "agents)",
                                     mirror)
                       : fmt::format("bootstrapping the Debian 12 base rootfs with {} with mmdebstrap from {}",
                                     fmt::join(extraPackages, ", "), mirror));
  std::vector<std::string> argv = {"mmdebstrap",
                                   ::geteuid() == 0 ? "--mode=root" : "--mode=unshare",
                                   "--variant=" + std::string(kVariant),
                                   fmt::format("--include={}", fmt::join(packages, ",")),
                                   "--format=tar",
                                   std::string(kDebianSuite),
                                   built};
  argv.insert(argv.end(), sources.begin(), sources.end());
  auto run = runCommand(argv, work->path());
  if (!run) return failWith(exit_code::kImage, "cannot start mmdebstrap: {}", run.error().message);
  if (run->exitCode != 0)
    return failWith(exit_code::kImage,
                    "mmdebstrap failed (exit {}): {}; check that `apt-get update` works and that {} is reachable{}",
                    run->exitCode, mmdebstrapErrors(run->stderrText), mirror,
                    ::geteuid() == 0 ? "" : ", and that unprivileged user namespaces are enabled (or run as root)");
  if (auto r = syncPath(built); !r) return std::unexpected(r.error());
  if (::rename(built.c_str(), tarball.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot rename {} to {}: {}", built, tarball, errnoText(errno));
  if (auto r = syncPath(imagesDir); !r) return std::unexpected(r.error());
  return tarball;
}

}  // namespace airlock::image
