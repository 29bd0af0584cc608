#include "workspace/git_config_paths.h"

#include <git2.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <mutex>
#include <set>
#include <string_view>

#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// `path` (absolute, or relative to `baseRel` below `root`) as a normalized
/// workspace-relative path; false when it is outside the workspace or "~".
bool toWorkspacePath(std::string_view path, const std::string& root, std::string_view baseRel, std::string& out) {
  if (path.empty() || path.front() == '~') return false;
  std::string full;
  if (path.front() == '/') {
    if (path == root) return out.clear(), true;
    if (!path.starts_with(root + "/")) return false;
    full = std::string(path.substr(root.size() + 1));
  } else {
    full = baseRel.empty() ? std::string(path) : std::string(baseRel) + "/" + std::string(path);
  }
  std::vector<std::string> parts;
  for (size_t s = 0; s <= full.size();) {
    size_t e = full.find('/', s);
    if (e == std::string::npos) e = full.size();
    std::string c = full.substr(s, e - s);
    s = e + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (parts.empty()) return false;  // above the root
      parts.pop_back();
      continue;
    }
    parts.push_back(std::move(c));
  }
  out.clear();
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return true;
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
  struct stat st {};
  if (::lstat((root + "/.git").c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
  git_config* cfg = nullptr;
  if (git_config_open_ondisk(&cfg, (root + "/.git/config").c_str()) != 0) return {};
  struct Ctx {
    const std::string& root;
    std::set<std::string> out;
  } ctx{root, {}};
  git_config_foreach(
      cfg,
      [](const git_config_entry* e, void* p) -> int {
        auto& c = *static_cast<Ctx*>(p);
        if (!e->name || !e->value) return 0;
        std::string_view v = e->value;
        std::string rel;
        auto add = [&](std::string_view path, std::string_view base) {
          if (toWorkspacePath(path, c.root, base, rel)) c.out.insert(rel);
        };
        auto command = [&](std::string_view cmd) {
          auto w = words(cmd);
          for (size_t i = 0; i < w.size(); ++i)
            if (w[i].find('/') != std::string::npos) add(w[i], "");
        };
        switch (kindOf(lower(e->name))) {
          case Kind::None: break;
          case Kind::Path: add(v, ""); break;
          case Kind::Include:
            add(v, ".git");
            if (e->include_depth > 0) add(v, "");  // relative to the including file: below the root or .git
            break;
          case Kind::Command: command(v); break;
          case Kind::Helper:
            if (v.starts_with("!")) command(v.substr(1));
            else if (v.starts_with("/")) add(v, "");
            break;
        }
        return 0;
      },
      &ctx);
  git_config_free(cfg);
  return {ctx.out.begin(), ctx.out.end()};
}

}  // namespace airlock::workspace
