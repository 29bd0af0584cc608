#pragma once
// A workspace that is a linked git worktree (`git worktree add`): its `.git`
// is a file, "gitdir: /repo/.git/worktrees/NAME", and the repository it
// needs (objects, refs, config) lies outside the workspace, in the common
// directory that gitdir's `commondir` names. Inside the VM no host path
// exists, so the snapshot gets a standalone `.git` directory instead: the
// common directory's objects, refs and config (taken with takeSnapshot()'s
// rules: hooks kept out, credentials and commands stripped from the config)
// with this worktree's own HEAD and index. The other worktrees' metadata
// (`worktrees/`) and the main checkout's submodule repositories (`modules/`)
// stay out; so do all the other checkouts' files. The agent's commits are
// imported into the common directory (git_import.h).

#include <optional>
#include <string>

#include "common/error.h"
#include "workspace/snapshot.h"

namespace airlock::workspace {

/// Where a linked worktree's repository lives (real paths).
struct LinkedGitDir {
  std::string gitDir;     ///< the worktree's own git directory (HEAD, index): .git/worktrees/NAME
  std::string commonDir;  ///< the repository's shared directory (objects, refs, config)
};

/// The repository of `workspace` when its `.git` is a regular file naming a
/// git directory outside the workspace ("gitdir: PATH", relative to the
/// workspace or absolute) whose `commondir` names the shared directory (a
/// submodule checkout's gitdir has none: its common directory is itself).
/// nullopt when `.git` is a directory, missing, a symlink, not a "gitdir:"
/// file, or names a directory inside the workspace (the snapshot has it).
/// Errors (kHostNotReady): the named directory is not a git directory.
Result<std::optional<LinkedGitDir>> findLinkedGitDir(const std::string& workspace);

/// Replaces the `.git` file that takeSnapshot() copied to `snapshotDir`/.git
/// with a standalone git directory for `linked` (see the file comment), and
/// merges what that copy found into `snapshot` (the workspace's result): its
/// manifest entries, kept-out paths and stripped configs, under ".git/". The
/// built-in secret names apply; the workspace's own patterns do not (they
/// name work-tree paths). Errors: as takeSnapshot(); the worktree's HEAD
/// cannot be read.
Result<> addLinkedGitDir(const LinkedGitDir& linked, const std::string& snapshotDir, SnapshotResult& snapshot,
                         const SnapshotOptions& options = {});

}  // namespace airlock::workspace
