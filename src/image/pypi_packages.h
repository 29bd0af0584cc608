#pragma once
// Agent programs from PyPI (Hermes Agent), installed inside a VM and never
// on this host: pip resolving, downloading and unpacking packages (and an
// sdist's build backend) is package code, so it runs in a build VM booted
// from the agent's own base (Debian 12 with python3-venv), behind the
// egress firewall (PyPI's two hosts only; no network at all with `--from
// DIR`). The guest makes a venv at /opt/<agent> and copies it to
// /workspace/opt/<agent>; the export of that workspace (an OCI layer tar,
// made by the guest: hostile input) is applied with the layer rules of
// image/oci/layer_unpack.h to an empty tree, and only its opt/<agent>
// enters the image.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::image {

/// Debian packages the base of a PyPI agent's image adds: python3 (Debian
/// 12's CPython 3.11) and python3-venv (venv with its bundled pip).
const std::vector<std::string>& pypiBasePackages();

/// The hosts a PyPI build VM may reach, as HOST:PORT: PyPI's index
/// (pypi.org) and its file host (files.pythonhosted.org), HTTPS only.
const std::vector<std::string>& pypiHosts();

/// What one build VM of a PyPI agent gets.
struct GuestInstall {
  std::string agent;      ///< the agent's name, for messages
  std::string image;      ///< the VM's root: an erofs image (the agent's base with the agent user)
  std::string workspace;  ///< host directory given to the VM as a snapshot at /workspace
  std::string script;     ///< run by /bin/sh -c as root in /workspace (pipInstallScript)
  std::vector<std::string> hosts;  ///< the only hosts the VM may reach (HOST:PORT); none: no network
};

/// Gets the path of the change set of a build VM's /workspace (an OCI
/// layer tar made by the guest), while it exists.
using ChangeSetConsumer = std::function<Result<>(const std::string& changeSet)>;

/// Boots a build VM for `install` (cli/guest_install.h), runs its script,
/// exports /workspace's changes, hands their path to `apply`, and leaves
/// nothing behind. Errors: the script's failure (its output went to
/// stderr), the VM's, or `apply`'s; kImage unless they carry their own.
using GuestInstaller = std::function<Result<>(const GuestInstall& install, const ChangeSetConsumer& apply)>;

/// The build VM's script (POSIX sh, `set -e`): a venv at `prefix` (an
/// absolute guest path, e.g. /opt/hermes), `package`==`version` installed
/// into it by its pip (output on stderr; only warnings and errors with
/// `quiet`), from PyPI or, with `offline`, from /workspace/wheels alone
/// (--no-index), then `prefix` copied with its symlinks to
/// /workspace`prefix`. Names and versions must be the spec parser's
/// (letters, digits, '.', '_', '-', '+'): they are quoted anyway.
std::string pipInstallScript(std::string_view package, std::string_view version, std::string_view prefix,
                             bool offline, bool quiet);

/// Copies the regular files of `fromDir` whose names end in .whl, .tar.gz
/// or .zip (wheels and sdists) into `dest`/wheels (created), not following
/// symlinks; returns how many. None is an error (kUsage, naming `package`
/// and `version`: DIR must hold them and their dependencies).
Result<size_t> stageDistributions(const std::string& fromDir, const std::string& dest, std::string_view package,
                                  std::string_view version);

/// Applies the build VM's change set `changeSet` to `scratch` (an empty
/// directory, on the same filesystem as `root`) with the OCI layer rules,
/// checks that it holds `prefix` (e.g. /opt/hermes) as a directory and
/// nothing else (anything else is refused, named), clears setuid and
/// setgid bits, moves it to `root``prefix`, and writes
/// /usr/local/bin/`installAs`: a script running `prefix`/bin/`binary`,
/// which must be a regular file there (the package's console script).
/// Errors carry exit_code::kImage and name the agent (`agent`).
Result<> layVenv(const std::string& changeSet, const std::string& scratch, const std::string& root,
                 const std::string& prefix, const std::string& binary, const std::string& installAs,
                 const std::string& agent);

/// Whether this host reaches PyPI: a TCP connection to pypi.org:443 within
/// `timeoutMs`. Errors start "PyPI unreachable:" with the reason and name
/// the way out: `pip download` elsewhere, then `airlock image build
/// `agent` --from DIR` (kImage).
Result<> checkPypiReachable(std::string_view agent, std::string_view package, std::string_view version,
                            int timeoutMs = 10'000);

}  // namespace airlock::image
