#pragma once
// Applies image layers (tar, tar+gzip, tar+zstd) to a root filesystem tree
// being staged on the host, in order, with the OCI whiteout rules: ".wh.NAME"
// deletes NAME of the lower layers, ".wh..wh..opq" empties its directory of
// everything the lower layers put there.
//
// Every entry passes workspace::TarGuard (the rules shared with the change-set
// parser and fuzzed there): no absolute names, no "..", nothing below a
// symlink of the same layer, hard links only to earlier files of the layer.
// Parent directories are opened with openat2(RESOLVE_IN_ROOT), so a symlink
// left by a lower layer resolves inside the tree, never on the host; the last
// component is always created with *at() calls that do not follow symlinks.
// Device nodes, FIFOs and sockets are skipped (the guest's /dev is devtmpfs).
// Owners are kept when airlock runs as root; xattrs are not unpacked.

#include <cstdint>
#include <string>

#include "common/error.h"
#include "workspace/tar_safety.h"

namespace airlock::image::oci {

/// What applying one layer did.
struct LayerStats {
  uint64_t entries = 0;         ///< tar entries read
  uint64_t skippedSpecial = 0;  ///< device nodes, FIFOs and sockets left out
  std::string diffId;           ///< "sha256:<hex>" of the uncompressed tar stream (the config's diff_id)
};

/// Applies the layer blob at `blobPath` to the tree whose root directory is
/// open as `rootFd`. `layerName` ("layer 2 of 3 (sha256:...)") starts every
/// error, which also names the offending entry; errors carry kImage.
Result<LayerStats> applyLayer(int rootFd, const std::string& blobPath, const std::string& layerName,
                              const workspace::TarLimits& limits = {});

}  // namespace airlock::image::oci
