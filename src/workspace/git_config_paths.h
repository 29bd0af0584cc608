#pragma once
// Workspace paths that the user's own git configuration names as code: git
// runs or reads them on the host (core.hooksPath, included config files,
// core.attributesFile, and the programs of command-valued keys such as
// core.fsmonitor, diff.*.textconv, filter.*.clean). The review gate holds
// them back, with everything below them, like the built-in held-back list.

#include <string>
#include <vector>

namespace airlock::workspace {

/// Reads `workspace`/.git/config and config.worktree (the user's host files,
/// trusted; for a gitfile "gitdir: X", a worktree, X's common dir's config and
/// X/config.worktree; a .git symlink is not followed) with libgit2, includes
/// resolved by libgit2, and returns every workspace-relative path
/// (normalized, "" = the root) named by:
///   core.hooksPath, core.attributesFile        relative to the workspace root
///   include.path, includeIf.*.path              relative to the config file's
///                                               directory (nested ones: also the root)
///   core.fsmonitor, core.sshCommand, core.editor, core.pager, core.askPass,
///   sequence.editor, diff.external, diff.*.textconv, diff.*.command,
///   filter.*.clean|smudge|process, merge.*.driver, gpg.program,
///   gpg.*.program, credential.helper ("!cmd" or an absolute path),
///   credential.*.helper, alias.* ("!cmd")      every word with a '/', relative
///                                               to the root
/// Absolute paths count when inside the workspace; "~" paths and paths
/// outside are left out. A missing or unreadable config gives no paths.
std::vector<std::string> gitConfigNamedPaths(const std::string& workspace);

}  // namespace airlock::workspace
