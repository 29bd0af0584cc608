#include "image/pypi_packages.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "image/rootfs_staging.h"

namespace airlock::image {
namespace {

/// The wheels pip may take for the guest: CPython kGuestPython on glibc
/// x86_64 (Debian 12 has glibc 2.36; pip also takes older manylinux tags
/// for it), or pure Python.
std::vector<std::string> guestWheelFlags() {
  return {"--only-binary=:all:", "--python-version",     std::string(kGuestPython), "--implementation", "cp",
          "--platform",          "manylinux_2_36_x86_64"};
}

const std::vector<std::string> kQuiet = {"--no-input", "--disable-pip-version-check", "--retries", "1", "--timeout",
                                         "30"};

Result<> requirePip() {
  if (findProgram("python3").empty())
    return failWith(exit_code::kHostNotReady,
                    "python3 is not installed; airlock fetches PyPI agents with its pip: install python3-pip");
  auto run = runCommand({"python3", "-m", "pip", "--version"});
  if (!run || run->exitCode != 0)
    return failWith(exit_code::kHostNotReady,
                    "pip is not installed; airlock fetches PyPI agents with it: install python3-pip");
  return {};
}

/// PEP 503 normalized name, with '_' (as in wheel and dist-info names).
std::string normalized(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '_') out += '_';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool isDottedIdentifier(std::string_view s) {
  for (size_t start = 0;;) {
    size_t dot = s.find('.', start);
    if (!isIdentifier(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

const std::vector<std::string>& pypiBasePackages() {
  static const std::vector<std::string> packages = {"python3"};
  return packages;
}

std::string pipFailure(std::string_view text) {
  for (std::string_view marker : {"Failed to establish a new connection: ", "ConnectTimeoutError(", "ProxyError(",
                                  "Temporary failure in name resolution", "Network is unreachable"}) {
    size_t at = text.find(marker);
    if (at == std::string_view::npos) continue;
    std::string_view reason = text.substr(at);
    reason = reason.substr(0, std::min({reason.find('\''), reason.find('\n'), reason.find(")'")}));
    return fmt::format("PyPI unreachable: {}", trimmed(reason));
  }
  std::string picked;
  int count = 0;
  for (size_t at = 0; at < text.size() && count < 3;) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with("ERROR: ")) continue;
    picked += (picked.empty() ? "" : " | ") + std::string(line);
    ++count;
  }
  return picked.empty() ? "pip failed without an ERROR line" : picked;
}

Result<std::pair<std::string, std::string>> consoleScript(std::string_view entryPoints, std::string_view name,
                                                          std::string_view package) {
  bool inScripts = false;
  for (size_t at = 0; at < entryPoints.size();) {
    size_t end = std::min(entryPoints.find('\n', at), entryPoints.size());
    const std::string line = trimmed(entryPoints.substr(at, end - at));
    at = end + 1;
    if (line.starts_with('[')) {
      inScripts = line == "[console_scripts]";
      continue;
    }
    size_t eq = line.find('=');
    if (!inScripts || eq == std::string::npos || trimmed(std::string_view(line).substr(0, eq)) != name) continue;
    const std::string target = trimmed(std::string_view(line).substr(eq + 1));
    size_t colon = target.find(':');
    const std::string module = trimmed(std::string_view(target).substr(0, colon));
    const std::string attr = colon == std::string::npos ? "" : trimmed(std::string_view(target).substr(colon + 1));
    if (!isDottedIdentifier(module) || !isDottedIdentifier(attr))
      return failWith(exit_code::kImage, "{}: console script {} is not MODULE:FUNCTION ({})", package, name, target);
    return std::pair{module, attr};
  }
  return failWith(exit_code::kImage, "{} has no console script {} (check `binary` in the agent spec)", package, name);
}

Result<std::string> fetchWheels(const std::string& cacheDir, const std::string& package, const std::string& version,
                                const std::string& fromDir, const std::string& agent, const ProgressFn& progress) {
  const std::string dir = cacheDir + "/pypi";
  const std::string cached = fmt::format("{}/{}-{}", dir, normalized(package), version);
  if (pathExists(cached)) return cached;
  if (auto r = requirePip(); !r) return std::unexpected(r.error());
  if (auto r = makeDirs(dir); !r) return std::unexpected(r.error());
  auto lock = FileLock::acquire(dir + "/.lock", "fetching PyPI packages", progress);
  if (!lock) return std::unexpected(lock.error());
  if (pathExists(cached)) return cached;
  if (auto r = removeStaleBuilds(dir); !r) return std::unexpected(r.error());
  auto work = TempDir::create(dir, "tmp-");
  if (!work) return std::unexpected(work.error());
  const std::string part = work->path() + "/wheels";
  report(progress,
         fromDir.empty()
             ? fmt::format("downloading {}=={} and its dependencies from PyPI (wheels only)", package, version)
             : fmt::format("taking {}=={} and its dependencies from {} (wheels only)", package, version, fromDir));
  std::vector<std::string> argv = {"python3", "-m", "pip", "download", "--dest", part};
  argv.insert(argv.end(), kQuiet.begin(), kQuiet.end());
  const auto wheels = guestWheelFlags();
  argv.insert(argv.end(), wheels.begin(), wheels.end());
  if (!fromDir.empty()) argv.insert(argv.end(), {"--no-index", "--find-links", fromDir});
  argv.push_back(package + "==" + version);
  auto run = runCommand(argv, work->path());
  if (!run) return failWith(exit_code::kImage, "cannot start pip: {}", run.error().message);
  if (run->exitCode != 0) {
    const std::string why = pipFailure(run->stderrText);
    const std::string fix =
        fromDir.empty()
            ? fmt::format(
                  "on a host that cannot reach PyPI, `pip download --only-binary=:all: --python-version {} "
                  "--platform manylinux_2_36_x86_64 -d DIR {}=={}` elsewhere and run `airlock image build {} "
                  "--from DIR`",
                  kGuestPython, package, version, agent)
            : fmt::format(
                  "DIR must hold wheels of {}=={} and its dependencies for CPython {} (an sdist would run "
                  "its build on this host and is not taken)",
                  package, version, kGuestPython);
    return failWith(exit_code::kImage, "{}; {}", why, fix);
  }
  if (::rename(part.c_str(), cached.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot rename {} to {}: {}", part, cached, errnoText(errno));
  if (auto r = syncPath(dir); !r) return std::unexpected(r.error());
  return cached;
}

Result<> installWheels(const std::string& root, const std::string& prefix, const std::string& wheelsDir,
                       const std::string& package, const std::string& version, const std::string& script,
                       const std::string& installAs, const ProgressFn& progress) {
  if (auto r = requirePip(); !r) return r;
  const std::string venv = root + prefix;
  const std::string site = fmt::format("{}/lib/python{}/site-packages", venv, kGuestPython);
  if (auto r = makeDirs(site); !r) return r;
  if (auto r = makeDirs(venv + "/bin"); !r) return r;
  report(progress, fmt::format("installing {}=={} into a venv at {}", package, version, prefix));
  std::vector<std::string> argv = {"python3",
                                   "-m",
                                   "pip",
                                   "install",
                                   "--no-index",
                                   "--find-links",
                                   wheelsDir,
                                   "--target",
                                   site,
                                   "--no-compile",
                                   "--no-warn-script-location"};
  argv.insert(argv.end(), kQuiet.begin(), kQuiet.end());
  const auto wheels = guestWheelFlags();
  argv.insert(argv.end(), wheels.begin(), wheels.end());
  argv.push_back(package + "==" + version);
  auto run = runCommand(argv, venv);
  if (!run) return failWith(exit_code::kImage, "cannot start pip: {}", run.error().message);
  if (run->exitCode != 0)
    return failWith(exit_code::kImage, "pip install {}=={} failed: {}", package, version, pipFailure(run->stderrText));
  // The venv: pyvenv.cfg next to bin/, whose python3 is the guest's.
  if (auto r = writeRootFile(
          root, prefix.substr(1) + "/pyvenv.cfg",
          fmt::format("home = /usr/bin\ninclude-system-site-packages = false\nversion = {}\n", kGuestPython), 0644);
      !r)
    return r;
  for (const char* name : {"python3", "python"}) {
    const std::string link = venv + "/bin/" + name;
    if (::symlink("/usr/bin/python3", link.c_str()) != 0 && errno != EEXIST)
      return failWith(exit_code::kImage, "cannot create {}: {}", link, errnoText(errno));
  }
  // The console script, from the package's own dist-info.
  const std::string distInfo = fmt::format("{}-{}.dist-info", normalized(package), version);
  auto names = listDir(site);
  if (!names) return std::unexpected(names.error());
  std::string entryPoints;
  for (const auto& n : *names) {
    std::string lower = n;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower != distInfo) continue;
    const std::string file = site + "/" + n + "/entry_points.txt";
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) break;
    auto text = readFile(file, 1 << 20);
    if (!text) return std::unexpected(text.error());
    entryPoints = *text;
  }
  auto entry = consoleScript(entryPoints, script, package + "==" + version);
  if (!entry) return std::unexpected(entry.error());
  const auto& [module, attr] = *entry;
  const std::string first = attr.substr(0, attr.find('.'));
  return writeRootFile(root, "usr/local/bin/" + installAs,
                       fmt::format("#!{}/bin/python3\n# {} from {}=={} (airlock)\nimport sys\nfrom {} import {}\n"
                                   "sys.argv[0] = \"{}\"\nsys.exit({}())\n",
                                   prefix, script, package, version, module, first, installAs, attr),
                       0755);
}

}  // namespace airlock::image
