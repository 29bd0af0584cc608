#pragma once
// The run directories of VMs ($XDG_STATE_HOME/airlock/vms/vm-XXXXXX: QEMU's
// sockets and jail, the scratch disk, the workspace image). A running
// Machine holds the flock of its directory's kRunDirLock for its life, and
// its janitor shares it: when airlock dies the janitor removes the
// directory before the lock is free. What a reboot or a killed
// janitor leaves is swept by the next launch (and by `airlock doctor`).

#include <cstddef>
#include <string>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::vm {

/// The lock file of a run directory, flock()ed by its machine.
inline constexpr const char* kRunDirLock = "owner.lock";
/// A run directory's note of where its scratch disk is kept when its
/// machine is gone (LaunchOptions::keepScratchAt), one line.
inline constexpr const char* kRunDirKeep = "keep-scratch";

/// Locks the run directory `dir` for the calling machine's life (the
/// returned descriptor holds the flock). The lock file appears already
/// locked: a concurrent sweep never finds it free.
Result<Fd> lockRunDir(const std::string& dir);

/// Removes the run directories in `vmsDir` whose machine is gone: the lock
/// is free, or (a directory being set up has none yet) there is no lock and
/// the directory is over a minute old. A scratch disk whose keep-scratch
/// note names a session's scratch.ext4 under `sessionsDir` is moved there
/// first (a regular file only, never over an existing one). Returns how
/// many directories were removed.
size_t sweepStaleRunDirs(const std::string& vmsDir, const std::string& sessionsDir);

}  // namespace airlock::vm
