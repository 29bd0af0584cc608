#pragma once
// Credentials in git config files, removed from the snapshot's copy (the
// host's file is never touched):
//  - userinfo in any URL ("https://TOKEN@host", "https://user:pass@host",
//    "https://x-access-token:T@host"), in values (remote.*.url, pushurl,
//    submodule.*.url, url.*.insteadOf) and in section names
//    ([url "https://T@host/"]): all of it for every scheme but ssh, where
//    the user name stays and only a ":password" goes;
//  - whole lines whose key carries a secret: http.extraHeader (Authorization
//    and token headers), sendemail.smtpPass, and any key ending in "token",
//    "password" or "passwd" (github.token, hub.oauthtoken...).

#include <string>
#include <string_view>

namespace airlock::workspace {

/// True for the git config files of a repository in the workspace: `config`
/// or `config.worktree` anywhere below a `.git` directory (.git/config,
/// sub/.git/config, .git/modules/M/config, .git/worktrees/W/config.worktree).
bool isGitConfigPath(std::string_view rel);

/// `text` (a git config file) without its credentials (see the file comment);
/// `edits` is set to the number of URLs and lines changed (0: `text` as is).
std::string stripGitCredentials(std::string_view text, size_t& edits);

}  // namespace airlock::workspace
