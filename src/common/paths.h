#pragma once
// Where airlock keeps its files (XDG base directories).

#include <string>

#include "common/error.h"

namespace airlock {

/// $AIRLOCK_CACHE_DIR, else $XDG_CACHE_HOME/airlock, else ~/.cache/airlock.
/// Downloads and built assets (kernel, initramfs, erofs images) live here.
std::string cacheDir();

/// $XDG_STATE_HOME/airlock, else ~/.local/state/airlock (sessions, journals, logs).
std::string stateDir();

/// A private directory for sockets of one VM: $XDG_RUNTIME_DIR/airlock or
/// /tmp/airlock-<uid>, created 0700.
Result<std::string> runtimeDir();

/// mkdir -p with `mode` for the directories it creates.
Result<> makeDirs(const std::string& path, unsigned mode = 0755);

/// Removes a directory tree (never follows symlinks). Missing is not an error.
Result<> removeTree(const std::string& path);

/// A temporary directory removed with its contents on destruction.
class TempDir {
 public:
  /// Creates `<parent>/<prefix>XXXXXX`.
  static Result<TempDir> create(const std::string& parent, const std::string& prefix);
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

/// Directory holding the running airlock executable (for airlock-init).
std::string selfDir();

}  // namespace airlock
