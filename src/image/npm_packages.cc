#include "image/npm_packages.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "image/tar_member.h"

namespace airlock::image {
namespace {

/// Flags for every npm call: quiet, no network extras.
const std::vector<std::string> kQuiet = {"--no-update-notifier", "--no-fund", "--no-audit", "--loglevel=error"};

/// The "npm error" lines that say what failed (not the log file pointer), at most three.
std::string npmErrors(const CommandOutput& out) {
  std::string picked;
  int count = 0;
  const std::string& text = out.stderrText;
  for (size_t at = 0; at < text.size() && count < 3;) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with("npm error ") || line.find("complete log") != std::string::npos) continue;
    picked += (picked.empty() ? "" : " | ") + line;
    ++count;
  }
  return picked.empty() ? fmt::format("exit {}", out.exitCode) : picked;
}

Result<> requireNpm() {
  if (findProgram("npm").empty())
    return failWith(exit_code::kHostNotReady,
                    "npm is not installed; airlock fetches agent CLIs from the npm registry with it: install "
                    "Node.js with npm (Debian package npm)");
  return {};
}

/// The one *.tgz file in `dir`.
Result<std::string> packedFile(const std::string& dir) {
  auto names = listDir(dir);
  if (!names) return failWith(exit_code::kImage, "{}", names.error().message);
  std::string found;
  for (const auto& name : *names)
    if (name.ends_with(".tgz")) found = dir + "/" + name;
  if (found.empty()) return failWith(exit_code::kImage, "npm pack wrote no tarball into {}", dir);
  return found;
}

}  // namespace

std::string npmTarballName(const std::string& name, const std::string& version) {
  std::string flat = name.starts_with('@') ? name.substr(1) : name;
  for (char& c : flat) {
    if (c == '/') c = '+';
  }
  return flat + "@" + version + ".tgz";
}

Result<std::string> fetchNpmPackage(const std::string& cacheDir, const std::string& name, const std::string& version,
                                    const ProgressFn& progress) {
  const std::string dir = cacheDir + "/npm";
  const std::string cached = dir + "/" + npmTarballName(name, version);
  if (pathExists(cached)) return cached;
  if (auto r = requireNpm(); !r) return std::unexpected(r.error());
  if (auto r = makeDirs(dir); !r) return std::unexpected(r.error());
  auto lock = FileLock::acquire(dir + "/.lock", "building npm packages", progress);
  if (!lock) return std::unexpected(lock.error());
  if (pathExists(cached)) return cached;
  if (auto r = removeStaleBuilds(dir); !r) return std::unexpected(r.error());
  auto work = TempDir::create(dir, "tmp-");
  if (!work) return std::unexpected(work.error());
  report(progress, fmt::format("downloading {}@{} from the npm registry", name, version));
  // A throwaway npm cache: the tarball is kept once, in `dir`, not twice.
  std::vector<std::string> argv = {"npm", "pack", name + "@" + version, "--pack-destination", work->path(),
                                   "--cache", work->path() + "/npm-cache"};
  argv.insert(argv.end(), kQuiet.begin(), kQuiet.end());
  auto run = runCommand(argv, work->path());
  if (!run) return failWith(exit_code::kImage, "cannot start npm: {}", run.error().message);
  if (run->exitCode != 0)
    return failWith(exit_code::kImage,
                    "npm pack {}@{} failed: {}; check that the registry is reachable (`npm ping`) and the version "
                    "exists (`npm view {}@{} version`)",
                    name, version, npmErrors(*run), name, version);
  auto packed = packedFile(work->path());
  if (!packed) return std::unexpected(packed.error());
  if (auto r = syncPath(*packed); !r) return std::unexpected(r.error());
  if (::rename(packed->c_str(), cached.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot rename {} to {}: {}", *packed, cached, errnoText(errno));
  return cached;
}

Result<> installNpmPackage(const std::string& cacheDir, const std::string& prefix, const std::string& name,
                           const std::string& version, const ProgressFn& progress) {
  if (auto r = requireNpm(); !r) return r;
  if (auto r = makeDirs(prefix); !r) return r;
  report(progress, fmt::format("installing {}@{} and its dependencies with npm", name, version));
  std::vector<std::string> argv = {"npm",           "install",        "--prefix",          prefix,
                                   "--omit=dev",    "--ignore-scripts", "--no-package-lock", "--cache",
                                   cacheDir + "/npm/cache", name + "@" + version};
  argv.insert(argv.end(), kQuiet.begin(), kQuiet.end());
  auto run = runCommand(argv, prefix);
  if (!run) return failWith(exit_code::kImage, "cannot start npm: {}", run.error().message);
  if (run->exitCode != 0)
    return failWith(exit_code::kImage,
                    "npm install {}@{} failed: {}; check that the registry is reachable (`npm ping`) and the "
                    "version exists (`npm view {}@{} version`)",
                    name, version, npmErrors(*run), name, version);
  return {};
}

Result<> extractPackageFile(const std::string& tarball, const std::string& pathInPackage, const std::string& dest,
                            const std::string& workDir, unsigned mode) {
  return extractTarMember(tarball, "package/" + pathInPackage, dest, workDir, mode, "check `binary` in the agent spec");
}

Result<std::string> npmPackageBin(const std::string& packageJson, const std::string& package) {
  auto doc = nlohmann::json::parse(packageJson, nullptr, false);
  const auto bin = doc.is_object() ? doc.value("bin", nlohmann::json()) : nlohmann::json();
  const std::string base = package.substr(package.rfind('/') + 1);
  std::string path;
  if (bin.is_string())
    path = bin.get<std::string>();
  else if (bin.is_object() && bin.size() == 1 && bin.begin()->is_string())
    path = bin.begin()->get<std::string>();
  else if (bin.is_object() && bin.contains(base) && bin[base].is_string())
    path = bin[base].get<std::string>();
  else
    return failWith(exit_code::kImage,
                    "{} names no single program in package.json \"bin\"; an MCP server from npm "
                    "must have one",
                    package);
  while (path.starts_with("./")) path.erase(0, 2);
  bool plain = !path.empty() && path.front() != '/';
  for (char c : path)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-' || c == '/');
  for (size_t start = 0; plain && start <= path.size();) {
    size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part(path.data() + start, end - start);
    plain = part != ".." && part != "." && !part.empty();
    start = end + 1;
  }
  if (!plain)
    return failWith(exit_code::kImage, "{}: package.json \"bin\" is not a plain path inside the package", package);
  return path;
}

}  // namespace airlock::image
