#include "workspace/git_identity.h"

#include <git2.h>

#include <mutex>

namespace airlock::workspace {
namespace {

/// `v` as a git config value: double-quoted, '"' and '\' escaped, control
/// characters (a newline would start a new key) dropped.
std::string quoted(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

GitIdentity hostGitIdentity(const std::string& home, const std::string& xdgConfigHome) {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
  GitIdentity id;
  git_config* cfg = nullptr;
  if (git_config_new(&cfg) != 0) return id;
  // Levels as git's: the XDG file below ~/.gitconfig, which wins.
  if (!xdgConfigHome.empty())
    (void)git_config_add_file_ondisk(cfg, (xdgConfigHome + "/git/config").c_str(), GIT_CONFIG_LEVEL_XDG, nullptr, 0);
  if (!home.empty())
    (void)git_config_add_file_ondisk(cfg, (home + "/.gitconfig").c_str(), GIT_CONFIG_LEVEL_GLOBAL, nullptr, 0);
  for (auto [key, field] : {std::pair{"user.name", &id.name}, std::pair{"user.email", &id.email}}) {
    git_buf buf = GIT_BUF_INIT;
    if (git_config_get_string_buf(&buf, cfg, key) == 0) *field = std::string(buf.ptr, buf.size);
    git_buf_dispose(&buf);
  }
  git_config_free(cfg);
  return id;
}

std::string guestGitConfig(const GitIdentity& id) {
  std::string out;
  if (!id.name.empty() || !id.email.empty()) {
    out += "[user]\n";
    if (!id.name.empty()) out += "\tname = " + quoted(id.name) + "\n";
    if (!id.email.empty()) out += "\temail = " + quoted(id.email) + "\n";
  }
  out += "[safe]\n\tdirectory = /workspace\n";
  return out;
}

}  // namespace airlock::workspace
