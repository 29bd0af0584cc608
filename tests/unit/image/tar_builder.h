#pragma once
// Builds tar layers in memory for tests (libarchive writer): regular files,
// directories, symlinks, hard links and device nodes, uncompressed, gzip or zstd.

#include <string>
#include <vector>

namespace airlock::test {

/// One entry of a test layer.
struct TarEntry {
  std::string name;
  char type = 'f';        ///< 'f' file, 'd' dir, 'l' symlink, 'h' hard link, 'c' char device
  std::string data;       ///< file content, or the link target
  unsigned mode = 0644;
};

/// The tar stream of `entries`; `compression` is "none", "gzip" or "zstd".
std::string makeTar(const std::vector<TarEntry>& entries, const std::string& compression = "none");

}  // namespace airlock::test
