#pragma once
// A workspace that is a linked git worktree (`git worktree add`): its `.git`
// is a file, "gitdir: /repo/.git/worktrees/NAME", and the repository it
// needs (objects, refs, config) lies outside the workspace, in the common
// directory that gitdir's `commondir` names. Inside the VM no host path
// exists, so the snapshot gets a standalone `.git` directory instead: of the
// common directory only the repository (objects, refs, packed-refs, config,
// info/, shallow; taken with takeSnapshot()'s rules: credentials and
// commands stripped from the config), with this worktree's own git
// directory over it (HEAD, index, a rebase or merge in progress, its
// sparse-checkout and per-worktree refs; not its pointers, lock, reflog or
// config.worktree), and `core.bare = false` (the common directory may be a
// bare clone). Nothing else of the common directory comes along: not the
// main checkout's index, reflog or rebase, not the other worktrees'
// metadata, not a checkout that lives inside a bare repository, no hooks.
// The agent's commits are imported through the worktree's git directory
// (git_import.h): its HEAD, the common directory's objects and refs.

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
/// (nothing when the rules kept it out) with a standalone git directory for
/// `linked` (see the file comment; `snapshotDir`.worktree-git is used and
/// removed on the way), and
/// merges what that copy found into `snapshot` (the workspace's result): its
/// manifest entries, kept-out paths (not what the rules above leave out)
/// and stripped configs, under ".git/". The
/// built-in secret names apply; the workspace's own patterns do not (they
/// name work-tree paths). Errors: as takeSnapshot(); the worktree's HEAD
/// cannot be read.
Result<> addLinkedGitDir(const LinkedGitDir& linked, const std::string& snapshotDir, SnapshotResult& snapshot,
                         const SnapshotOptions& options = {});

/// The snapshot of a workspace that every session (and `airlock snapshot`)
/// takes: takeSnapshot() of `workspace` into `snapshotDir` and, when it is a
/// linked worktree, addLinkedGitDir(), whose repository is stored in
/// `linked` when given. Errors: as either.
Result<SnapshotResult> snapshotWorkspace(const std::string& workspace, const std::string& snapshotDir,
                                         const IgnoreRules& rules, const SnapshotOptions& options = {},
                                         std::optional<LinkedGitDir>* linked = nullptr);

}  // namespace airlock::workspace
