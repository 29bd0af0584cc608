#include "workspace/git_config_paths.h"

#include <git2.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <mutex>
#include <set>
#include <string_view>

#include "common/encoding.h"
#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

/// `path` (absolute, or relative to the absolute directory `base`) as a
/// normalized workspace-relative path; false when it is outside the
/// workspace `root` (absolute, no symlinks) or starts with "~".
bool toWorkspacePath(std::string_view path, const std::string& root, const std::string& base, std::string& out) {
  if (path.empty() || path.front() == '~') return false;
  std::string abs = path.front() == '/' ? std::string(path) : base + "/" + std::string(path);
  std::vector<std::string> parts;
  for (size_t s = 0; s <= abs.size();) {
    size_t e = abs.find('/', s);
    if (e == std::string::npos) e = abs.size();
    std::string c = abs.substr(s, e - s);
    s = e + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(std::move(c));
  }
  std::string norm;
  for (const auto& p : parts) norm += "/" + p;
  if (norm == root) return out.clear(), true;
  if (!norm.starts_with(root + "/")) return false;
  out = norm.substr(root.size() + 1);
  return true;
}

/// The first line of the file `path` (at most 4 KiB), without the newline.
std::string firstLine(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return "";
  char buf[4096];
  std::string line = std::fgets(buf, sizeof buf, f) ? buf : "";
  std::fclose(f);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

/// The config files of the repository whose .git is at `root`/.git: its
/// config (a directory), or for a gitfile ("gitdir: X", a worktree) X's
/// common dir's config and X/config.worktree.
std::vector<std::string> configFiles(const std::string& root) {
  struct stat st {};
  std::string dotgit = root + "/.git";
  if (::lstat(dotgit.c_str(), &st) != 0) return {};
  if (S_ISDIR(st.st_mode)) return {dotgit + "/config", dotgit + "/config.worktree"};
  if (!S_ISREG(st.st_mode)) return {};
  std::string line = firstLine(dotgit);
  if (!line.starts_with("gitdir: ")) return {};
  std::string gitdir = line.substr(8);
  if (gitdir.empty()) return {};
  if (gitdir.front() != '/') gitdir = root + "/" + gitdir;
  std::string common = firstLine(gitdir + "/commondir");
  if (common.empty()) common = gitdir;
  else if (common.front() != '/') common = gitdir + "/" + common;
  return {common + "/config", gitdir + "/config.worktree"};
}

/// The words of a shell command (quotes removed, no expansion): enough to
/// find the programs and scripts it names.
std::vector<std::string> words(std::string_view cmd) {
  std::vector<std::string> out;
  std::string cur;
  bool any = false;
  char quote = 0;
  for (char c : cmd) {
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      any = true;
    } else if (c == ' ' || c == '\t' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '\n') {
      if (any || !cur.empty()) out.push_back(std::move(cur));
      cur.clear();
      any = false;
    } else {
      cur += c;
    }
  }
  if (any || !cur.empty()) out.push_back(std::move(cur));
  return out;
}

enum class Kind { None, Path, Include, Command, Helper };

/// What the (lowercased) key `name` ("section.sub.key") holds.
Kind kindOf(const std::string& name) {
  size_t first = name.find('.'), last = name.rfind('.');
  if (first == std::string::npos) return Kind::None;
  std::string section = name.substr(0, first), key = name.substr(last + 1);
  bool sub = last != first;
  if (section == "core" && !sub && (key == "hookspath" || key == "attributesfile")) return Kind::Path;
  if (section == "include" && !sub && key == "path") return Kind::Include;
  if (section == "includeif" && sub && key == "path") return Kind::Include;
  if (section == "core" && !sub &&
      (key == "fsmonitor" || key == "sshcommand" || key == "editor" || key == "pager" || key == "askpass"))
    return Kind::Command;
  if (section == "sequence" && key == "editor") return Kind::Command;
  if (section == "diff" && ((!sub && key == "external") || (sub && (key == "textconv" || key == "command"))))
    return Kind::Command;
  if (section == "filter" && sub && (key == "clean" || key == "smudge" || key == "process")) return Kind::Command;
  if (section == "merge" && sub && key == "driver") return Kind::Command;
  if (section == "gpg" && key == "program") return Kind::Command;
  if (section == "credential" && key == "helper") return Kind::Helper;
  if (section == "alias") return Kind::Helper;  // "!cmd" runs a shell command
  return Kind::None;
}

}  // namespace

std::vector<std::string> gitConfigNamedPaths(const std::string& workspace) {
  char buf[PATH_MAX];
  if (!::realpath(workspace.c_str(), buf)) return {};
  const std::string root = buf;
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
  struct Ctx {
    const std::string& root;
    std::string dir;  // the config file's directory: relative includes start there
    std::set<std::string> out;
  } ctx{root, "", {}};
  for (const std::string& file : configFiles(root)) {
    git_config* cfg = nullptr;
    if (::access(file.c_str(), R_OK) != 0 || git_config_open_ondisk(&cfg, file.c_str()) != 0) continue;
    ctx.dir = file.substr(0, file.rfind('/'));
    git_config_foreach(
        cfg,
        [](const git_config_entry* e, void* p) -> int {
          auto& c = *static_cast<Ctx*>(p);
          if (!e->name || !e->value) return 0;
          std::string_view v = e->value;
          std::string rel;
          auto add = [&](std::string_view path, const std::string& base) {
            if (toWorkspacePath(path, c.root, base, rel)) c.out.insert(rel);
          };
          auto command = [&](std::string_view cmd) {
            for (const auto& w : words(cmd))
              if (w.find('/') != std::string::npos) add(w, c.root);
          };
          switch (kindOf(asciiLower(e->name))) {
            case Kind::None: break;
            case Kind::Path: add(v, c.root); break;
            case Kind::Include:
              add(v, c.dir);
              if (e->include_depth > 0) add(v, c.root);  // relative to the including file: maybe in the workspace
              break;
            case Kind::Command: command(v); break;
            case Kind::Helper:
              if (v.starts_with("!")) command(v.substr(1));
              else if (v.starts_with("/")) add(v, c.root);
              break;
          }
          return 0;
        },
        &ctx);
    git_config_free(cfg);
  }
  return {ctx.out.begin(), ctx.out.end()};
}

}  // namespace airlock::workspace
