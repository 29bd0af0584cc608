#pragma once
// An agent's saved state (issue 16) crossing the VM boundary as a tar
// stream: unpacked on the host from what the guest sends (untrusted: the
// guest's own tar made it), packed on the host for the guest to unpack at
// the next boot. What is kept is plain data: directories, regular files
// without setuid, setgid or sticky bits, and relative symlinks that stay
// inside the state; nothing else survives, and nothing is ever executed or
// interpreted on the host.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::state {

/// Well-formed UTF-8 without control characters: the names packState can
/// write back (pax headers are UTF-8) and a terminal can show.
bool isPlainName(std::string_view s);

/// Bounds of one saved state.
struct StateLimits {
  uint64_t maxBytes = uint64_t{256} << 20;  ///< file contents, summed
  uint64_t maxEntries = 100'000;            ///< entries of any kind, dropped ones included
};

/// What unpackState kept and left out.
struct UnpackSummary {
  uint64_t bytes = 0;    ///< file contents kept
  uint64_t entries = 0;  ///< directories, files and symlinks kept
  /// Entries left out, one line each ("a/dev: a block device"), at most
  /// 20 (the count is in `droppedCount`).
  std::vector<std::string> dropped;
  uint64_t droppedCount = 0;
};

/// Unpacks the tar file `tarPath` into the new directory `destDir` (made
/// 0700; its parent must exist), keeping only entries under `roots` (paths
/// relative to the agent's home: ".claude", ".claude.json"): directories,
/// regular files (mode & 0755 for directories and & 0755 for files, owner
/// write added) and relative symlinks whose target resolves inside
/// `destDir` without leaving it at any step. Hard links, device nodes,
/// FIFOs, sockets, absolute or escaping symlinks, entries outside `roots`,
/// paths with "..", entries below a symlink, paths deeper than 64 levels or
/// longer than 1024 bytes, and names that are not plain UTF-8 are dropped
/// and listed. Entries at or below one of `excluded` (the agent's
/// credentials, the user's imported settings: never kept) are skipped
/// without a word.
/// Fails (and removes `destDir`) when the contents pass limits.maxBytes or
/// the entries limits.maxEntries, or the stream is not a readable tar.
Result<UnpackSummary> unpackState(const std::string& tarPath, const std::string& destDir,
                                  const std::vector<std::string>& roots, const StateLimits& limits,
                                  const std::vector<std::string>& excluded = {});

/// Packs the directory `dir` (as unpackState left it) into the tar file
/// `tarPath`, which must not exist (made 0600) (ustar/pax, entries relative to `dir`, owned by `uid`:`uid`).
/// Symlinks are stored as links, never followed. Returns the file's size.
Result<uint64_t> packState(const std::string& dir, const std::string& tarPath, uint32_t uid);

}  // namespace airlock::state
