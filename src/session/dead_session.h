#pragma once
// A detached session whose supervisor died (SIGKILL, OOM killer, a crash)
// before its agent's changes were exported: its janitor kept the VM's
// scratch disk in the session (vm::LaunchOptions::keepScratchAt), which
// holds them. exportDeadSession() boots the session's recorded root image
// with that disk, with no network and no workspace, and exports the
// /workspace upper layer as any session's end does, so the changes reach
// the same review gate. The disk is only ever read by a guest, never
// mounted on the host.

#include <string>

#include "common/error.h"
#include "session/runner.h"
#include "session/ui.h"

namespace airlock::session {

/// Exports the changes of the dead session in `dir` into its changes.tar
/// and removes the kept disk. Returns false, doing nothing, when there is
/// nothing to export: the session runs (its run lock is held), holds no kept
/// disk, or already has a change set. Errors: kImage (its root image is
/// gone), kVmFailed, kUnsafeChangeSet (the export's limits, or a disk whose
/// content fails the export); the disk is then kept for another try, and
/// the message names `airlock rm -f`.
/// First, what a reboot or a killed janitor left in `stateDir`'s VM run
/// directories is swept (a kept disk moved to its session).
Result<bool> exportDeadSession(const std::string& stateDir, const std::string& dir, const SandboxLauncher& launch,
                               Ui& ui);

}  // namespace airlock::session
