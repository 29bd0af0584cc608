#pragma once
// One program out of a downloaded .tar.gz (an npm tarball, a release
// archive): the named member only, as a regular file, never through a link.

#include <string>
#include <string_view>

#include "common/error.h"

namespace airlock::image {

/// Extracts the regular file `member` (a path inside the .tar.gz `tarball`)
/// to `dest` (same filesystem as `workDir`, a scratch directory) with
/// permission bits `mode`. `hint` ends the error when the member is missing.
Result<> extractTarMember(const std::string& tarball, const std::string& member, const std::string& dest,
                          const std::string& workDir, unsigned mode, std::string_view hint);

}  // namespace airlock::image
