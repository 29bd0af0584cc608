#pragma once
// The workspace snapshot as the guest sees it: an erofs image on a read-only
// virtio-blk disk, the lower layer of the guest's /workspace overlay. No host
// file server touches guest requests (the disk is a file QEMU reads), and
// under emulation the guest reads it 2x faster than over virtio-fs.

#include <string>

#include "common/error.h"

namespace airlock::vm {

/// Writes an erofs image of the directory `snapshotDir` to `imagePath`
/// (mkfs.erofs): every entry owned by the guest's agent user
/// (guest::kAgentUid), so the agent may edit what the user may; modes and
/// per-file mtimes kept (incremental builds in the guest see the host's
/// times); no extended attributes (no host security labels or file
/// capabilities reach the guest); sparse files stay sparse (4 KiB chunks);
/// mkfs.erofs dies with airlock; mode 0644 (QEMU's jail uid reads it: keep
/// it in a private directory). The image is about the snapshot's size.
/// Errors: kHostNotReady when mkfs.erofs is missing or fails (no space).
Result<> buildWorkspaceImage(const std::string& snapshotDir, const std::string& imagePath);

}  // namespace airlock::vm
