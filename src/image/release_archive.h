#pragma once
// Agent programs shipped as release archives that their npm package names
// rather than contains: the package's postinstall script would download
// them (Crush: @charmland/crush's package.json "archives"). airlock runs no
// package script: it reads the entry for linux-x64 from the package.json of
// the pinned version, downloads the archive itself (or takes it from a
// directory the user names) and checks it against the SHA-256 the package
// gives. Verified archives are cached under <cache>/downloads/archives/.

#include <string>
#include <string_view>

#include "common/error.h"
#include "common/file_lock.h"

namespace airlock::image {

/// One entry of package.json "archives": {"linux-x64": {"name", "url",
/// "format", "checksum": {"algorithm": "sha256", "digest"}, "wrappedIn"}}.
struct ReleaseArchive {
  std::string name;       ///< a plain file name ([A-Za-z0-9._+-], no "..")
  std::string url;        ///< https:// only, printable ASCII
  std::string sha256;     ///< 64 lowercase hex digits
  std::string wrappedIn;  ///< the archive's top folder, or empty: a plain name too
};

/// Reads the `platform` entry (e.g. "linux-x64") of "archives" in the
/// package.json text `packageJson` of `package` (named in errors). Only
/// format "tar.gz" and algorithm "sha256" are taken. Errors (exit_code::kImage)
/// name the field that is missing or not plain.
Result<ReleaseArchive> parseReleaseArchive(std::string_view packageJson, std::string_view platform,
                                           std::string_view package);

/// Where a verified archive is cached: `cacheDir`/downloads/archives/<sha256>-<name>.
std::string releaseArchivePath(const std::string& cacheDir, const ReleaseArchive& archive);

/// Returns the cached archive, verified against archive.sha256. When not
/// cached: with `fromDir` non-empty, takes `fromDir`/<name> (a regular file,
/// not followed through a symlink); otherwise downloads archive.url over
/// HTTPS (redirects to HTTPS only, at most 1 GiB). A file whose SHA-256
/// differs is refused and not kept. Errors carry exit_code::kImage; a failed
/// download says how to bring the file in with `--from DIR` (`agent` names
/// the agent in that hint).
Result<std::string> fetchReleaseArchive(const std::string& cacheDir, const ReleaseArchive& archive,
                                        const std::string& fromDir, const std::string& agent,
                                        const ProgressFn& progress);

}  // namespace airlock::image
