#pragma once
// Builds tar streams in memory for tests (libarchive's pax writer): regular
// files, directories, symlinks, hard links, device nodes and FIFOs, with the
// names exactly as given (hostile ones included), uncompressed, gzip or zstd.

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::test {

/// One entry of a tar built by makeTar().
struct TarEntry {
  std::string name;
  char type = 'f';        ///< f file, d dir, l symlink, h hard link, c char dev, b block dev, p FIFO
  std::string content;    ///< file content
  std::string link;       ///< symlink / hard link target
  unsigned mode = 0644;
};

/// The pax tar stream of `entries` (mtime 2023-11-14 for every entry);
/// `compression` is "none", "gzip" or "zstd". A libarchive failure fails the test.
std::string makeTar(const std::vector<TarEntry>& entries, const std::string& compression = "none");

/// The hard-link amplifier: a pax tar of a few KiB holding "big", a sparse
/// file of `size` bytes (4 KiB of data at its start, the rest one hole), and
/// `links` hard links "link0".."linkN-1" to it.
std::string makeSparseLinkTar(uint64_t size, int links);

}  // namespace airlock::test
