#pragma once
// The janitor: a small helper process (airlock __janitor) that outlives
// airlock. airlock tells it, over a pipe, which child pids and temp
// directories belong to the current VM. If airlock dies without saying
// "clear" (crash, SIGKILL), the janitor kills those pids and removes those
// directories, so no VM, socket or scratch disk is left behind.

#include <sys/types.h>

#include <string>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::vm {

class Janitor {
 public:
  /// Starts `<selfExe> __janitor` with the read end of a pipe on fd 3.
  /// With `heldLock` (a descriptor holding an flock), the janitor shares
  /// that lock on fd 4 from its start to its exit: when airlock dies the
  /// lock is never free until the cleanup is done.
  static Result<Janitor> start(const std::string& selfExe, int heldLock = -1);
  Janitor(Janitor&&) = default;
  Janitor& operator=(Janitor&&) = default;
  /// Registers a process to kill if airlock dies.
  void watchPid(pid_t pid);
  /// Registers a directory tree to remove if airlock dies.
  void watchDir(const std::string& path);
  /// If airlock dies, the janitor holds an flock on the lock file `path`
  /// while it cleans up (taken as soon as airlock is gone), so whoever
  /// waits for that lock sees the cleanup done.
  void holdLock(const std::string& path);
  /// If airlock dies, renames `path` to `keptAs` (same filesystem) once the
  /// watched processes are gone and before any directory is removed.
  void keepFile(const std::string& path, const std::string& keptAs);
  /// Normal exit: everything was cleaned up; the janitor exits doing nothing.
  void clear();

 private:
  explicit Janitor(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

/// Body of `airlock __janitor`: reads instructions from `fd` until EOF, then
/// cleans up unless it was told "clear". Returns the process exit code.
int runJanitor(int fd);

}  // namespace airlock::vm
