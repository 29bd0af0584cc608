#pragma once
// Read-only erofs images of host root filesystem directories, built with
// mkfs.erofs and cached by content under <cache>/rootfs/<digest>.erofs
// (<cache>: HostDirs::cache). `airlock run-image DIR`, a rootfs directory as
// the configured image, and OCI pulls (checkRootfsDir) use them.
//
// The digest covers everything mkfs.erofs puts in the image: for every entry of
// the tree (walked without following symlinks, in byte order of names) its
// relative path, type, permission bits, mtime in ns, extended attributes, and
// then its symlink target, device number, or, for a regular file, its size and
// the SHA-256 of its contents (hard links: the first path of the inode).
// Owners are not part of it: images are built with --all-root, so a rootfs
// unpacked by a normal user boots owned by root.
//
// Hashing contents costs one read of the tree per run: 4 ms for the busybox
// test rootfs; for a 1.3 GB tree 1.2 s from the page cache and 6 s cold
// (measured here). It is chosen over (size, mtime, inode, ctime) because a
// stat-based key can miss a same-size rewrite within one timestamp tick.
// Trees of OCI images should be keyed by the image digest instead of walked.

#include <string>

#include "common/error.h"
#include "common/file_lock.h"

namespace airlock::image {

/// Where the rootfs erofs images are cached: `cacheDir`/rootfs.
std::string rootfsCacheDir(const std::string& cacheDir);

/// Returns the path of a read-only erofs image of the root filesystem directory
/// `dir`, building it with `mkfs.erofs` unless the cache already holds one with
/// the same digest, in rootfsCacheDir(`cacheDir`). Safe when several airlock
/// processes call it at once.
/// Errors carry exit_code::kImage: `dir` missing, not a directory, without /bin/sh
/// ("DIR does not look like a root filesystem: no /bin/sh"), unreadable, or
/// mkfs.erofs failing (kHostNotReady only for a host kernel without openat2).
Result<std::string> ensureRootfsImage(const std::string& cacheDir, const std::string& dir,
                                      const ProgressFn& progress);

/// Fails unless `dir` is a directory whose /bin/sh, resolved inside `dir` (an
/// absolute symlink target counts from `dir`, as it will in the guest), is an
/// executable regular file.
Result<> checkRootfsDir(const std::string& dir);

/// The content digest of the tree at `dir` (64 hex characters); see above for
/// what it covers. Fails, naming the entry, when part of the tree cannot be read.
Result<std::string> rootfsDigest(const std::string& dir);

}  // namespace airlock::image
