#pragma once
// Who the agent commits as in the VM: the host user's git identity, and the
// guest's own ~/.gitconfig that carries it (issue "Git inside the sandbox",
// item 1). Nothing else of the user's global git config enters the VM.

#include <string>

namespace airlock::workspace {

/// A git author: user.name and user.email ("" when unset).
struct GitIdentity {
  std::string name, email;
};

/// user.name and user.email of the host user's global git config, read
/// with libgit2 as git reads them: `xdgConfigHome`/git/config, then
/// `home`/.gitconfig (a later file wins), include.path honoured. Missing or
/// unreadable files give empty fields; the system config is not read.
GitIdentity hostGitIdentity(const std::string& home, const std::string& xdgConfigHome);

/// The guest's ~/.gitconfig: `id` as [user] (a field left out when empty;
/// values quoted, control characters dropped) and safe.directory =
/// /workspace (the snapshot's files belong to the host user's uid).
std::string guestGitConfig(const GitIdentity& id);

}  // namespace airlock::workspace
