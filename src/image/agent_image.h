#pragma once
// Local agent images: a Debian 12 base (base_rootfs.h) plus the agent's
// program at its pinned version (from npm, a release archive an npm package
// names, or PyPI through a build VM), with the `agent` user, as a
// read-only erofs image cached under <cache>/images/<recipe digest>.erofs
// (recipe.h). This is what `airlock image build` and a first `airlock run`
// call.

#include <string>

#include "agents/agent_spec.h"
#include "common/error.h"
#include "common/file_lock.h"
#include "image/pypi_packages.h"

namespace airlock::image {

/// Options of one image build.
struct ImageBuildOptions {
  /// Rebuild the agent image even when the cache holds it (the base tarball
  /// and npm downloads are reused).
  bool force = false;
  /// A directory holding what the build would otherwise download from
  /// outside the npm registry: the release archive of an `archive:` recipe
  /// (Crush) under its own file name, checked against the SHA-256 its npm
  /// package names; or the wheels and sdists of a `pypi_package:` recipe
  /// (Hermes), installed by pip in the build VM without network. Empty:
  /// download.
  std::string fromDir;
  /// Runs a `pypi_package:` recipe's build VM (image/pypi_packages.h);
  /// unset: such a recipe fails (kInternal).
  GuestInstaller guestInstall;
  /// The build VM's pip says only warnings and errors.
  bool quiet = false;
};

/// Returns the path of the agent's erofs image, building it when the cache
/// does not hold one for the spec's recipe digest. Progress lines carry the
/// seconds since the build started. Safe when several airlock processes call
/// it at once (they wait on the cache lock). Errors carry exit_code::kImage,
/// or kHostNotReady for a missing host tool, and name the failed step and
/// the fix. `cacheDir` is airlock's cache directory (HostDirs::cache): the
/// image, the base tarball and the npm downloads are kept there.
Result<std::string> ensureAgentImage(const std::string& cacheDir, const agents::AgentSpec& spec,
                                     const ProgressFn& progress, const ImageBuildOptions& options = {});

}  // namespace airlock::image
