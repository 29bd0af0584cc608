#pragma once
// Credentials in git files, removed from the snapshot's copy (the host's file
// is never touched):
//  - userinfo in any URL ("https://TOKEN@host", "https://user:pass@host",
//    "https://x-access-token:T@host"), in values (remote.*.url, pushurl,
//    submodule.*.url, url.*.insteadOf) and in section names
//    ([url "https://T@host/"]): all of it for every scheme but ssh, where
//    the user name stays and only a ":password" goes. Backslash-continued
//    lines are joined before they are judged (a URL split by "\" counts);
//  - in config files, whole lines whose key carries a secret: http.extraHeader
//    (Authorization and token headers), sendemail.smtpPass, any key whose
//    name contains "token", "password", "passwd" or "secret" (github.token,
//    hub.oauthtoken, github.oauth-token...), and a credential.helper that is
//    an inline shell helper ("!f() { echo password=...; }; f") or names a
//    password or token.
// Config files are .git/config-like paths (isGitConfigPath), .gitmodules, bare
// repositories' configs (the snapshot finds those by HEAD and objects/), and
// files that a config includes; URL-only files are .git/FETCH_HEAD and
// .git/logs/** (reflogs record "clone: from https://T@host").

#include <string>
#include <string_view>
#include <vector>

namespace airlock::workspace {

/// What credential stripping a workspace file gets, by its path alone.
enum class GitFileKind {
  None,        ///< not a git file: copied as it is
  Config,      ///< git config syntax (.gitmodules, included files): URLs and secret keys stripped
  RepoConfig,  ///< a repository's own config: sanitizeRepoConfig(), then as Config
  UrlsOnly,    ///< FETCH_HEAD, reflogs: URLs stripped
};

/// The kind of `rel` by its path: RepoConfig for `config` or
/// `config.worktree` anywhere below a `.git` directory or a `NAME.git`
/// directory (.git/config, sub/.git/config, .git/modules/M/config,
/// .git/worktrees/W/config.worktree, mirror.git/config); Config for
/// `.gitmodules`; UrlsOnly for FETCH_HEAD and logs/** below a `.git`
/// directory.
GitFileKind gitFileKind(std::string_view rel);

/// True when gitFileKind(rel) is Config for a `config`/`config.worktree` path.
bool isGitConfigPath(std::string_view rel);

/// `text` (a git config file) without its credentials (see the file comment);
/// `edits` is set to the number of URLs and lines changed (0: `text` as is).
std::string stripGitCredentials(std::string_view text, size_t& edits);

/// `text` (a repository's own config) with only the sections and keys git
/// needs to work on the repository inside the sandbox, none that runs a
/// program, reads a file outside it or carries a credential; `edits` counts
/// the lines dropped (0: `text` as is). Kept: core (but sshCommand, pager,
/// editor, fsmonitor, hooksPath, alternateRefsCommand, askPass, gitProxy,
/// attributesFile, excludesFile, worktree), extensions, remote.* url,
/// pushurl, fetch, push, mirror, tagOpt, prune, pruneTags; branch.*; user
/// name and email; submodule (but an update command "!..."); merge, diff
/// (neither their drivers nor diff.external/tool), fetch, push, pull,
/// color, log, rerere, rebase, tag, pack, gc, status, index, advice, init
/// (but templateDir). Dropped: everything else (credential, include,
/// includeIf, url, http, filter, lfs, alias, gpg...), and comments.
/// `dropped`, when given, gets the names of the keys dropped, once each, as
/// "section.key" or "section.*.key" (a subsection is never shown: it may be
/// a URL with a token), sorted.
/// Issue: "Git inside the sandbox", item 1.
std::string sanitizeRepoConfig(std::string_view text, size_t& edits, std::vector<std::string>* dropped = nullptr);

/// `text` with the userinfo of every URL removed, line by line (FETCH_HEAD,
/// reflogs); `edits` as for stripGitCredentials().
std::string stripUrlUserinfo(std::string_view text, size_t& edits);

/// Paths a git config file names that hold or lead to credentials, as written
/// (unquoted, not resolved): `includes` from include.path and
/// includeIf.*.path, `stores` from `credential.helper = store --file=PATH`.
struct GitConfigRefs {
  std::vector<std::string> includes;
  std::vector<std::string> stores;
};
GitConfigRefs gitConfigRefs(std::string_view text);

/// `path` (from a git config) as a workspace-relative path: absolute paths
/// below `workspaceRoot` (an absolute path), relative ones from `baseDir` (a
/// workspace-relative directory), "." and ".." resolved lexically. Empty when
/// it leads outside the workspace, starts with '~' or is the root itself.
std::string resolveGitPath(std::string_view path, std::string_view baseDir, std::string_view workspaceRoot);

}  // namespace airlock::workspace
