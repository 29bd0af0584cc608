#pragma once
// What `airlock info` says about git in the sandbox: whether the workspace is
// a repository the VM can use, what the snapshot drops from its config, and
// what becomes of the agent's commits.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace airlock::cli {

/// The git envelope of one run.
struct GitEnvelope {
  enum class Repository {
    kNone,       ///< no `.git` at the workspace's top
    kDirectory,  ///< a `.git` directory: sanitized copy in the VM, commits imported
    kGitFile,    ///< `.git` is a file naming no repository outside the workspace: copied as it is
    kDirect,     ///< --workspace-mode=direct: the live repository, as it is
    kWorktree,   ///< a linked worktree: its repository's sanitized copy as `.git`, commits imported
  };
  Repository repository = Repository::kNone;
  std::string commonDir;             ///< kWorktree: the repository's shared directory
  std::string problem;               ///< kGitFile: why a run stops ("" when it does not)
  std::string pushToken;             ///< --git-token's source ("env:NAME"; never the token), "" without
  std::vector<std::string> pushHosts;  ///< where the git broker adds it, and port 22 opens for the SSH agent
  std::vector<std::string> sshKeys;    ///< --git-ssh-agent's keys (fingerprints), none without
  std::vector<std::string> sshHosts;   ///< whose port 22 it opens (config::gitSshHosts())
  bool sshConfirm = false;             ///< --git-ssh-confirm
  std::string mode;                  ///< --git: refs-only, branches, none
  std::vector<std::string> dropped;  ///< keys dropped from .git/config (workspace::sanitizeRepoConfig())
  bool urlCredentials = false;       ///< credentials removed from URLs in .git/config
};

/// The git envelope of a run on `workspace` with `--git=mode` ("" =
/// refs-only); `direct` for --workspace-mode=direct. Reads only the
/// repository's config (at most 1 MiB; a linked worktree's in its common
/// directory) and a `.git` file's pointers.
GitEnvelope gitEnvelope(const std::string& workspace, const std::string& mode, bool direct);

/// The "git" lines of `airlock info`.
std::string gitEnvelopeText(const GitEnvelope& git);

/// The "git" object of `airlock info --json`: repository ("none",
/// "directory", "git_file", "direct", "worktree"; a worktree adds
/// common_dir, a git_file that stops a run adds problem), commits ("refs-only", "branches",
/// "none", or "not imported"), config_keys_dropped, url_credentials_removed,
/// push_credentials ("none", "token", "ssh-agent" or "token+ssh-agent";
/// push_hosts with either, push_token_source with a token, ssh_agent_keys
/// and ssh_agent_confirm with the agent).
nlohmann::json gitEnvelopeJson(const GitEnvelope& git);

}  // namespace airlock::cli
