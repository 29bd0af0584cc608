#pragma once
// The snapshot: a private copy of the workspace in the session directory and
// the baseline manifest describing it. Files are copied in parallel, with a
// FICLONE reflink where the filesystem allows and a read/write copy
// otherwise; the same pass computes each file's SHA-256. Symlinks are copied
// as symlinks, never followed. FIFOs, sockets and device nodes are skipped
// with a warning and never opened. Excluded paths (see IgnoreRules) never
// enter the copy or the manifest.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "workspace/ignore.h"
#include "workspace/manifest.h"

namespace airlock::workspace {

/// Progress of a running snapshot or scan.
struct SnapshotProgress {
  uint64_t filesDone = 0;   ///< regular files copied/hashed so far
  uint64_t filesTotal = 0;  ///< regular files found by the walk
  uint64_t bytesDone = 0;   ///< bytes of content processed so far
};

/// Knobs for takeSnapshot() and scanTree().
struct SnapshotOptions {
  unsigned threads = 0;     ///< worker threads; 0 = one per CPU (at most 16)
  bool reflink = true;      ///< try FICLONE before copying (files of 64 KiB and more)
  /// Called from worker threads (serialized) about every 1,000 files.
  std::function<void(const SnapshotProgress&)> progress;
};

/// What a snapshot or scan found.
struct SnapshotResult {
  Manifest manifest;
  std::vector<std::string> warnings;  ///< one sentence per skipped special file
  std::vector<std::string> excluded;  ///< excluded paths (a directory stands for its contents)
  uint64_t reflinked = 0;             ///< files cloned with FICLONE
  uint64_t copied = 0;                ///< files copied byte by byte
  uint64_t bytes = 0;                 ///< total file content, bytes
};

/// Copies `workspace` into `destDir` (created; must not exist yet, its parent
/// must) and returns the baseline manifest. Fails naming the first path that
/// cannot be read or written (unreadable: exit_code::kHostNotReady, naming
/// --exclude PATH as the fix; `destDir` exists: kUsage), and then removes the
/// partial copy.
Result<SnapshotResult> takeSnapshot(const std::string& workspace, const std::string& destDir, const IgnoreRules& rules,
                                    const SnapshotOptions& options = {});

/// Like takeSnapshot() without copying: the manifest of `root` as it is now.
Result<SnapshotResult> scanTree(const std::string& root, const IgnoreRules& rules, const SnapshotOptions& options = {});

}  // namespace airlock::workspace
