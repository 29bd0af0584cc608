#include "cli/git_info.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/fd.h"
#include "workspace/git_credentials.h"
#include "workspace/linked_git_dir.h"

namespace airlock::cli {

GitEnvelope gitEnvelope(const std::string& workspace, const std::string& mode, bool direct) {
  GitEnvelope g;
  g.mode = mode.empty() ? "refs-only" : mode;
  struct stat st;
  if (::lstat((workspace + "/.git").c_str(), &st) != 0) return g;
  if (direct) {
    g.repository = GitEnvelope::Repository::kDirect;
    return g;
  }
  std::string config = workspace + "/.git/config";
  g.repository = GitEnvelope::Repository::kDirectory;
  if (!S_ISDIR(st.st_mode)) {
    auto linked = workspace::findLinkedGitDir(workspace);
    g.repository = GitEnvelope::Repository::kGitFile;
    if (!linked) g.problem = linked.error().message;
    if (!linked || !*linked) return g;
    g.repository = GitEnvelope::Repository::kWorktree;
    g.commonDir = (*linked)->commonDir;
    config = g.commonDir + "/config";
  }
  if (auto text = readFile(config, 1 << 20)) {
    size_t edits = 0, urls = 0;
    std::string sanitized = workspace::sanitizeRepoConfig(*text, edits, &g.dropped);
    (void)workspace::stripGitCredentials(sanitized, urls);
    g.urlCredentials = urls > 0;
  }
  return g;
}

std::string gitEnvelopeText(const GitEnvelope& g) {
  auto line = [](const std::string& head, const std::string& text) { return fmt::format("  {:<14} {}\n", head, text); };
  switch (g.repository) {
    case GitEnvelope::Repository::kNone:
      return line("git", "no repository at the workspace's top (.git)");
    case GitEnvelope::Repository::kDirect:
      return line("git",
                  "direct mode: the agent works on your live repository as it is (hooks and config included); "
                  "nothing is sanitized or imported");
    case GitEnvelope::Repository::kGitFile:
      return line("git", g.problem.empty() ? ".git is a file naming a repository inside the workspace: copied as it "
                                             "is; the agent's commits are not imported"
                                           : "a run stops here: " + g.problem);
    case GitEnvelope::Repository::kDirectory:
    case GitEnvelope::Repository::kWorktree:
      break;
  }
  const std::string what = g.repository == GitEnvelope::Repository::kWorktree
                               ? fmt::format("a linked worktree: its repository ({}) as .git, sanitized, without the "
                                             "other worktrees",
                                             g.commonDir)
                               : ".git, sanitized";
  std::string out = line("git", g.mode == "none" ? what + "; the agent's commits are not imported (--git=none)"
                                                 : fmt::format("{}; the agent's commits come back as "
                                                               "refs/airlock/NAME/... (--git={})",
                                                               what, g.mode));
  out += line("", g.dropped.empty() ? "nothing dropped from .git/config"
                                    : fmt::format("dropped from .git/config: {}", fmt::join(g.dropped, ", ")));
  if (g.urlCredentials) out += line("", "credentials removed from the URLs in .git/config");
  if (g.pushToken.empty() && g.sshKeys.empty())
    out += line("", "push: no git credentials go into the VM (no token, no SSH agent)");
  if (!g.pushToken.empty())
    out += line("", fmt::format("push: over HTTPS to {}, the token from {} added on this host (it never enters "
                                "the VM)",
                                fmt::join(g.pushHosts, ", "), g.pushToken));
  if (!g.sshKeys.empty())
    out += line("", fmt::format("push: over SSH to port 22 of {}, your SSH agent signing logins only, with {}{} "
                                "(no key enters the VM)",
                                fmt::join(g.sshHosts, ", "), fmt::join(g.sshKeys, ", "),
                                g.sshConfirm ? ", each one confirmed through SSH_ASKPASS" : ""));
  return out;
}

nlohmann::json gitEnvelopeJson(const GitEnvelope& g) {
  static constexpr const char* kNames[] = {"none", "directory", "git_file", "direct", "worktree"};
  const bool imported =
      g.repository == GitEnvelope::Repository::kDirectory || g.repository == GitEnvelope::Repository::kWorktree;
  nlohmann::json j = {{"repository", kNames[static_cast<int>(g.repository)]},
                      {"commits", imported ? g.mode : "not imported"},
                      {"config_keys_dropped", g.dropped},
                      {"url_credentials_removed", g.urlCredentials},
                      {"push_credentials", g.pushToken.empty() ? (g.sshKeys.empty() ? "none" : "ssh-agent")
                                                               : (g.sshKeys.empty() ? "token" : "token+ssh-agent")}};
  if (!g.pushToken.empty()) j["push_token_source"] = g.pushToken;
  if (!g.pushToken.empty() || !g.sshKeys.empty()) j["push_hosts"] = g.pushHosts;
  if (!g.sshKeys.empty()) {
    j["ssh_agent_keys"] = g.sshKeys;
    j["ssh_agent_confirm"] = g.sshConfirm;
  }
  if (!g.commonDir.empty()) j["common_dir"] = g.commonDir;
  if (!g.problem.empty()) j["problem"] = g.problem;
  return j;
}

}  // namespace airlock::cli
