#pragma once
// The Debian 12 base root filesystem every agent image starts from, built
// once with mmdebstrap and cached as an uncompressed tarball under
// <cache>/images/base-<digest>.tar, so each agent image only adds its
// own files instead of bootstrapping again.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file_lock.h"

namespace airlock::image {

/// Packages added to the minbase variant (which already holds the essential set).
const std::vector<std::string>& basePackages();

/// Digest of the base recipe: suite, variant, package list and a format
/// version (64 hex characters), plus `extraPackages` (Debian packages some
/// agents add, e.g. python3) when there are any. It does not cover the
/// mirror's contents: a cached base keeps the package versions it was
/// built with.
std::string baseDigest(const std::vector<std::string>& extraPackages);

/// Path of the base tarball with `extraPackages` in `imagesDir` (imagesDir() of recipe.h).
std::string baseTarballPath(const std::string& imagesDir, const std::vector<std::string>& extraPackages);

/// What building the base as a user other than root (mmdebstrap
/// --mode=unshare) needs that this host lacks, one line each with its fix:
/// newuidmap and newgidmap (package uidmap), and ranges of 65536 ids for
/// `user` (`uid`) in /etc/subuid and /etc/subgid (`subuidText`,
/// `subgidText`: their contents, empty when absent). Empty: ready.
std::vector<std::string> unprivilegedBuildProblems(const std::string& user, uid_t uid, bool hasNewuidmap,
                                                   bool hasNewgidmap, const std::string& subuidText,
                                                   const std::string& subgidText);

/// Returns the path of the base tarball with `extraPackages`, building it with mmdebstrap when
/// missing (about a minute with a warm network). The caller holds the lock
/// of `imagesDir` (FileLock on imagesDir/.lock). Errors carry
/// exit_code::kImage (kHostNotReady when mmdebstrap is missing, or, as a
/// user other than root, unprivilegedBuildProblems) and name the fix.
Result<std::string> ensureBaseTarball(const std::string& imagesDir, const std::vector<std::string>& extraPackages,
                                      const ProgressFn& progress);

}  // namespace airlock::image
