#include "cli/git_info.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/fd.h"
#include "workspace/git_credentials.h"

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
  if (!S_ISDIR(st.st_mode)) {
    g.repository = GitEnvelope::Repository::kGitFile;
    return g;
  }
  g.repository = GitEnvelope::Repository::kDirectory;
  if (auto text = readFile(workspace + "/.git/config", 1 << 20)) {
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
      return line("git",
                  ".git is a file (a linked worktree): the VM has no usable repository and no commits come "
                  "back");
    case GitEnvelope::Repository::kDirectory:
      break;
  }
  std::string out = line("git", g.mode == "none" ? ".git, sanitized; the agent's commits are not imported (--git=none)"
                                                 : fmt::format(".git, sanitized; the agent's commits come back as "
                                                               "refs/airlock/NAME/... (--git={})",
                                                               g.mode));
  out += line("", g.dropped.empty() ? "nothing dropped from .git/config"
                                    : fmt::format("dropped from .git/config: {}", fmt::join(g.dropped, ", ")));
  if (g.urlCredentials) out += line("", "credentials removed from the URLs in .git/config");
  out += line("", "push: no git credentials go into the VM (no token, no SSH agent)");
  return out;
}

nlohmann::json gitEnvelopeJson(const GitEnvelope& g) {
  static constexpr const char* kNames[] = {"none", "directory", "git_file", "direct"};
  const bool imported = g.repository == GitEnvelope::Repository::kDirectory;
  return {{"repository", kNames[static_cast<int>(g.repository)]},
          {"commits", imported ? g.mode : "not imported"},
          {"config_keys_dropped", g.dropped},
          {"url_credentials_removed", g.urlCredentials},
          {"push_credentials", "none"}};
}

}  // namespace airlock::cli
