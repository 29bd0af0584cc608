#pragma once
// Agent programs from the npm registry, through the host's `npm` client (so
// the user's registry, proxy and CA settings apply). Package tarballs are
// cached under <cache>/npm/ by name and version (<cache>: HostDirs::cache);
// npm's own download cache for installs is <cache>/npm/cache. npm never runs
// package scripts here.

#include <string>

#include "common/error.h"
#include "common/file_lock.h"

namespace airlock::image {

/// The cache file name of name@version: "@scope/pkg" becomes "scope+pkg",
/// e.g. "anthropic-ai+claude-code-linux-x64@2.1.332.tgz".
std::string npmTarballName(const std::string& name, const std::string& version);

/// Returns the path of the tarball of `name`@`version` (exact version),
/// downloading it with `npm pack` into `cacheDir`/npm/ when missing. Safe when
/// several airlock processes call it at once. Errors carry exit_code::kImage
/// (kHostNotReady when npm is missing).
Result<std::string> fetchNpmPackage(const std::string& cacheDir, const std::string& name, const std::string& version,
                                    const ProgressFn& progress);

/// Installs `name`@`version` with its production dependencies into
/// `prefix`/node_modules (`npm install --prefix ... --omit=dev --ignore-scripts`),
/// with npm's download cache in `cacheDir`/npm/cache.
Result<> installNpmPackage(const std::string& cacheDir, const std::string& prefix, const std::string& name,
                           const std::string& version, const ProgressFn& progress);

/// The program file an npm package declares, from its package.json text:
/// "bin" as a string, or an object with one entry or an entry named like
/// the package (without its scope). The path must stay inside the package:
/// relative, no "..", only [A-Za-z0-9._/-] ("./" is dropped). Errors carry
/// exit_code::kImage and name the package.
Result<std::string> npmPackageBin(const std::string& packageJson, const std::string& package);

/// Extracts `pathInPackage` (relative to the tarball's "package/" folder)
/// from the npm tarball `tarball` to `dest` (same filesystem as `workDir`,
/// a scratch directory), with permission bits `mode`.
Result<> extractPackageFile(const std::string& tarball, const std::string& pathInPackage, const std::string& dest,
                            const std::string& workDir, unsigned mode);

}  // namespace airlock::image
