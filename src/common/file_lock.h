#pragma once
// Exclusive file locks between airlock processes (flock(2)), announced on the
// progress line while waiting, and the plumbing of airlock's build caches
// (boot assets, rootfs images, the image store).
//
// Every cache entry is built in a "tmp-XXXXXX" directory next to it and
// renamed into place, so readers never see half an entry. Builders hold the
// cache's lock, so two airlock processes never build the same entry twice,
// and any "tmp-*" left in the cache while holding the lock is from a build
// that was killed.

#include <functional>
#include <string>

#include "common/error.h"
#include "common/fd.h"

namespace airlock {

/// Progress callback: one human-readable line per phase ("downloading kernel package ...").
using ProgressFn = std::function<void(const std::string&)>;

/// Calls `progress` with `line` when a callback is set.
void report(const ProgressFn& progress, const std::string& line);

/// An exclusive flock(2) on a lock file, held until destruction.
class FileLock {
 public:
  /// Locks `path` (created 0600 if missing, never through a symlink), waiting
  /// for another holder to finish; `what` says what the holder does, for the
  /// progress line shown while waiting ("waiting for another airlock process
  /// <what>": "building rootfs images", "flushing into /src/app").
  static Result<FileLock> acquire(const std::string& path, const std::string& what, const ProgressFn& progress);

 private:
  explicit FileLock(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

/// True when some process holds an flock(2) lock on the file `path` (the
/// holders here always lock exclusively; probed with a non-blocking shared
/// lock). A missing or unreadable file: false.
bool lockHeld(const std::string& path);

/// Removes the "tmp-*" entries of `dir` left by interrupted builds.
/// Call only while holding the lock of that cache.
Result<> removeStaleBuilds(const std::string& dir);

/// True when `path` exists (without following a final symlink).
bool pathExists(const std::string& path);

/// fsyncs the file or directory at `path`, so a renamed cache entry survives a crash.
Result<> syncPath(const std::string& path);

}  // namespace airlock
