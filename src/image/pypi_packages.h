#pragma once
// Agent programs from PyPI (Hermes Agent), through the host's pip (so the
// user's index, proxy and CA settings apply), wheels only: pip downloads
// and unpacks them but runs no package code on this host (an sdist would
// run its build backend here, so it is refused). The wheels are cached
// under <cache>/pypi/<package>-<version>/ and installed into the image as
// a venv of the guest's own python3 (Debian 12's).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/file_lock.h"

namespace airlock::image {

/// The guest's Python, as Debian 12's python3 package has it: the wheels
/// are chosen for it (CPython 3.11, manylinux x86_64, or pure Python).
inline constexpr std::string_view kGuestPython = "3.11";

/// Debian packages the base of a PyPI agent's image adds (python3).
const std::vector<std::string>& pypiBasePackages();

/// What a failed pip run says, from its stderr: "PyPI unreachable: REASON"
/// when pip could not connect to its index, else its ERROR lines (at most
/// three, joined by " | ").
std::string pipFailure(std::string_view stderrText);

/// The console script `name` of `package` from its entry_points.txt text:
/// {module, attribute path}, both dotted Python identifiers (anything else
/// is refused: they go into the wrapper script). Errors carry
/// exit_code::kImage and name the package.
Result<std::pair<std::string, std::string>> consoleScript(std::string_view entryPoints, std::string_view name,
                                                          std::string_view package);

/// Returns a directory holding `package`==`version` and its dependencies as
/// wheels for the guest's Python, downloading them with `python3 -m pip
/// download --only-binary=:all:` into `cacheDir`/pypi/ when not cached, or
/// with `fromDir` non-empty from that directory alone (--no-index). Errors
/// carry exit_code::kImage (kHostNotReady without pip) and, when PyPI
/// cannot be reached, start "PyPI unreachable:" and name `airlock image
/// build AGENT --from DIR` (`agent`).
Result<std::string> fetchWheels(const std::string& cacheDir, const std::string& package, const std::string& version,
                                const std::string& fromDir, const std::string& agent, const ProgressFn& progress);

/// Installs the wheels of `wheelsDir` for `package`==`version` into the tree
/// at `root` as a venv at `prefix` (a path in the guest, e.g. /opt/hermes):
/// pyvenv.cfg, bin/python3 -> /usr/bin/python3, the packages in its
/// lib/python<kGuestPython>/site-packages (pip install --target, wheels
/// only), and /usr/local/bin/`installAs`: a Python script running the
/// package's console script `script` with the venv's python3.
Result<> installWheels(const std::string& root, const std::string& prefix, const std::string& wheelsDir,
                       const std::string& package, const std::string& version, const std::string& script,
                       const std::string& installAs, const ProgressFn& progress);

}  // namespace airlock::image
