#pragma once
// The agent's commits, brought back from the guest's `.git` into the host
// repository as refs under refs/airlock/<session>/ (and, when the user
// asks, as local branches). Everything read from the change set is hostile:
// objects are read and hash-checked by libgit2 in a scratch repository whose
// only other object store is the host's (never the guest's config, hooks,
// alternates, grafts or shallow file), every new tree is checked for paths
// git itself refuses to check out (`.git` and its aliases), and sizes are
// capped. Only objects that pass are written to the host repository; no
// hook runs and nothing is checked out.

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "workspace/changeset.h"

namespace airlock::workspace {

/// What a review does with the agent's commits (`--git`).
enum class GitImportMode {
  kNone,      ///< nothing is imported
  kRefsOnly,  ///< refs/airlock/<session>/... only (the default)
  kBranches,  ///< also creates or fast-forwards local branches that are not checked out
};

/// Parses "none", "refs-only" or "branches"; kUsage names the choices.
Result<GitImportMode> parseGitImportMode(const std::string& text);

/// Bounds on what one import reads from the guest.
struct GitImportLimits {
  uint64_t maxObjectBytes = uint64_t{512} << 20;     ///< one object, inflated
  uint64_t maxTotalBytes = uint64_t{4} << 30;        ///< the guest's object files (loose and packs), as staged
  uint64_t maxInflatedBytes = uint64_t{16} << 30;    ///< all the guest's objects, inflated
  size_t maxObjects = 2'000'000;                     ///< objects in the guest's files
  uint64_t indexMemoryBytes = uint64_t{1536} << 20;  ///< address space a pack's indexing may add (a child process)
  unsigned indexSeconds = 300;                       ///< CPU time a pack's indexing may take
  size_t maxCommits = 20'000;                        ///< new commits per ref
  size_t maxRefs = 1'000;                            ///< refs the guest changed
};

/// One ref the agent made or moved.
struct ImportedRef {
  std::string guestRef;          ///< "refs/heads/fix-login", "refs/tags/v1", or "HEAD" (detached)
  std::string hostRef;           ///< where it landed ("refs/airlock/<session>/heads/fix-login"); "" if refused
  std::string tip;               ///< the commit (hex)
  std::string base;              ///< "main@abc1234": the host branch and commit it builds on ("" if none)
  size_t newCommits = 0;         ///< commits the host did not have
  std::vector<std::string> log;  ///< up to 10 "abc1234 subject" lines, newest first, control characters escaped
  std::string branch;            ///< kBranches: what happened to the local branch ("" otherwise)
  std::string refused;           ///< why it was not imported ("" when it was)
};

/// What one import did.
struct GitImport {
  std::vector<ImportedRef> refs;  ///< in ref-name order
  std::string refused;            ///< why nothing was imported ("" unless the whole import was refused)
};

/// Imports the refs the agent changed in `changes` (paths under ".git/":
/// loose refs under refs/heads and refs/tags, packed-refs, a detached HEAD;
/// objects as loose files and packs) into the repository at `gitDir` (the
/// workspace's `.git` directory, or a linked worktree's own git directory:
/// its HEAD counts, objects and refs go to its common directory) as `<refPrefix>heads/NAME`,
/// `<refPrefix>tags/NAME` and `<refPrefix>HEAD`. `refPrefix` is like
/// "refs/airlock/<session>/". `baselineGitDir` is the snapshot's `.git`
/// (host-made; "" or missing when it is gone): a ref the guest left at its
/// value there is not imported. `scratch` is an empty directory for the
/// scratch repository (the caller removes it). A ref whose commit is
/// missing, malformed or forged, whose new trees hold a `.git` path, with
/// too many commits, or that moved backwards (to an ancestor of the host's
/// ref of the same name) is refused by itself, as is one whose objects or
/// ref cannot be written; objects over the limits refuse the whole import.
/// Errors: kInternal when the host repository cannot be opened or the
/// scratch repository cannot be made.
Result<GitImport> importAgentCommits(const ChangeSet& changes, const std::string& gitDir,
                                     const std::string& baselineGitDir, const std::string& refPrefix,
                                     GitImportMode mode, const std::string& scratch,
                                     const GitImportLimits& limits = {});

/// True for a tree entry name git refuses to check out because a
/// filesystem may take it for `.git` or a path: ".git" in any case, with
/// trailing dots or spaces or an NTFS stream (":$INDEX_ALLOCATION"), its
/// 8.3 short name "git~1", with characters HFS+ ignores (U+200C-U+200F,
/// U+202A-U+202E, U+206A-U+206F, U+FEFF), as any "\\"-separated component
/// (NTFS); "", ".", ".." and any name holding '/'. Source: git's
/// verify_path(), is_hfs_dotgit(), is_ntfs_dotgit().
bool isDotGitAlias(const std::string& name);

/// True for the names a filesystem may take for `.gitmodules` (any case,
/// trailing dots or spaces, an NTFS stream, "gitmod~1", HFS+ ignorables):
/// git refuses such an entry when it is a symlink (fsck's gitmodulesSymlink).
bool isGitmodulesName(const std::string& name);

}  // namespace airlock::workspace
