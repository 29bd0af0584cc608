#pragma once
// File access inside a workspace that never follows a symlink and never leaves
// the workspace root: openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) where the
// kernel has it, else a component-by-component O_NOFOLLOW walk. Low-level
// calls return 0 or an errno value so callers can tell "absent" (ENOENT) from
// "a symlink is in the way" (ELOOP, ENOTDIR, EXDEV) and phrase the error.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::workspace {

/// Opens `rel` (a normalized relative path, "" = the root itself) below the
/// directory `rootFd`. No component, including the last, may be a symlink,
/// except that O_PATH|O_NOFOLLOW returns a descriptor for a final symlink.
/// Returns 0 and sets `out`, or an errno value.
int openBeneath(int rootFd, std::string_view rel, int flags, mode_t mode, Fd& out);

/// Opens the parent directory of `rel` (O_PATH|O_DIRECTORY) with the same rules.
int openParent(int rootFd, std::string_view rel, Fd& out);

/// Creates the missing ancestors of `rel` (mode 0755) without following
/// symlinks; appends each directory it creates to `created` (shallow first).
int makeParents(int rootFd, std::string_view rel, std::vector<std::string>& created);

/// Tests only: true makes openBeneath() use the O_NOFOLLOW walk even where
/// openat2 exists, so both resolvers are exercised.
void forceComponentWalk(bool force);

/// What is at a path right now, as lstat sees it.
struct LiveState {
  enum class Type { Absent, File, Dir, Symlink, Other };
  Type type = Type::Absent;
  uint32_t mode = 0;       ///< permission bits incl. setuid/setgid/sticky
  uint64_t size = 0;       ///< bytes
  std::string sha256;      ///< regular files, when hashing was requested
  std::string target;      ///< symlinks
};

/// Inspects `rel` below `rootFd`. Regular files are hashed when `hash` is set,
/// opened O_NONBLOCK|O_NOFOLLOW so a FIFO swapped in never blocks. A symlink
/// in a parent component fails with an error naming the path.
Result<LiveState> inspectBeneath(int rootFd, std::string_view rel, bool hash);

/// Sees each chunk of content a read loop reads, in order (e.g. a scanner).
using ChunkObserver = std::function<void(std::string_view)>;

/// SHA-256 (hex) of everything readable from `fd`, from its current offset;
/// `observe` (if set) sees every chunk read.
Result<std::string> hashFd(int fd, std::string_view what, const ChunkObserver& observe = {});

/// Copies `src` to `dst` (both open regular files): FICLONE reflink when
/// `tryReflink` and the filesystem allows, else a read/write loop. Returns the
/// SHA-256 of the content. `reflinked` reports which way was taken. `observe`
/// (if set) sees all of the content either way.
Result<std::string> copyAndHash(int src, int dst, bool tryReflink, bool& reflinked, std::string_view what,
                                const ChunkObserver& observe = {});

}  // namespace airlock::workspace
