#include "workspace/git_credentials.h"

#include <optional>
#include <set>

#include "common/token_prefixes.h"
#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e + 1 - b);
}

/// A config value without its surrounding double quotes (escapes kept).
std::string_view unquote(std::string_view v) {
  v = trim(v);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

bool schemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
         c == '.';
}

/// Removes the userinfo of every "scheme://userinfo@host" in `line`.
size_t stripUserinfo(std::string& line) {
  size_t edits = 0;
  for (size_t sep = line.find("://"); sep != std::string::npos; sep = line.find("://", sep + 3)) {
    size_t schemeStart = sep;
    while (schemeStart > 0 && schemeChar(line[schemeStart - 1])) --schemeStart;
    std::string scheme = lower(std::string_view(line).substr(schemeStart, sep - schemeStart));
    size_t start = sep + 3;
    size_t end = line.find_first_of("/?#\"' \t\r\n;\\", start);
    if (end == std::string::npos) end = line.size();
    // The last '@' of the authority: a raw '@' in a password leaves nothing behind.
    size_t at = std::string_view(line).substr(start, end - start).rfind('@');
    if (at == std::string_view::npos) continue;
    at += start;
    bool ssh = scheme == "ssh" || scheme == "git+ssh" || scheme == "ssh+git";
    if (ssh) {
      size_t colon = line.find(':', start);
      if (colon == std::string::npos || colon > at) continue;  // a user name only: kept
      line.erase(colon, at - colon);
    } else {
      line.erase(start, at + 1 - start);
    }
    ++edits;
  }
  return edits;
}

/// One config line split as "[section] key = value" (section empty when the
/// line has none; key lower case, empty for headers, comments and blanks).
struct ConfigLine {
  std::string section;  ///< lower case, "" when the line has no header
  std::string key;
  std::string_view value;
};

ConfigLine splitLine(std::string_view line) {
  ConfigLine out;
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return out;
  line = line.substr(i);
  if (line[0] == '[') {
    size_t close = line.find(']');
    if (close == std::string_view::npos) return out;
    std::string_view head = trim(line.substr(1, close - 1));
    size_t cut = head.find_first_of(" \t\".");
    out.section = lower(head.substr(0, cut));
    line = line.substr(close + 1);
    i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos) return out;
    line = line.substr(i);
  }
  if (line[0] == '#' || line[0] == ';') return out;
  size_t end = line.find_first_of(" \t=");
  out.key = lower(line.substr(0, end));
  if (end != std::string_view::npos) {
    size_t eq = line.find('=', end);
    if (eq != std::string_view::npos) out.value = line.substr(eq + 1);
  }
  return out;
}

/// True for a credential.helper value that carries or prints a secret.
bool secretHelper(std::string_view value) {
  std::string v = lower(unquote(value));
  return v.starts_with('!') || v.find("password=") != std::string::npos || v.find("token") != std::string::npos;
}

/// True for the key of a `key = value` line that holds a secret.
bool secretKey(std::string_view line) {
  ConfigLine l = splitLine(line);
  const std::string& key = l.key;
  if (key.empty()) return false;
  if (key == "helper") return secretHelper(l.value);
  return key == "extraheader" || key == "smtppass" || key.find("token") != std::string::npos ||
         key.find("password") != std::string::npos || key.find("passwd") != std::string::npos ||
         key.find("secret") != std::string::npos;
}

/// The next logical line of `text` from `pos` (physical lines ending in "\"
/// joined, the backslashes and newlines dropped); `pos` moves past it.
std::string nextLogicalLine(std::string_view text, size_t& pos) {
  std::string joined;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view body = text.substr(pos, next - pos);
    pos = next;
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.remove_suffix(1);
    if (body.ends_with('\\') && pos < text.size()) {
      joined.append(body.substr(0, body.size() - 1));
      continue;
    }
    joined.append(body);
    break;
  }
  return joined;
}

/// The components of `rel` ("a/b" -> {"a", "b"}).
std::vector<std::string_view> components(std::string_view rel) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string_view::npos) slash = rel.size();
    out.push_back(rel.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return out;
}

}  // namespace

GitFileKind gitFileKind(std::string_view rel) {
  auto parts = components(rel);
  if (parts.back() == ".gitmodules") return GitFileKind::Config;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!parts[i].ends_with(".git")) continue;
    std::string_view last = parts.back();
    // Below .git any depth (modules, worktrees); below NAME.git (a bare repository) its own files only.
    bool anyDepth = parts[i] == ".git";
    size_t rest = parts.size() - i - 1;
    if ((last == "config" || last == "config.worktree") && (anyDepth || rest == 1)) return GitFileKind::RepoConfig;
    if (last == "FETCH_HEAD" && (anyDepth || rest == 1)) return GitFileKind::UrlsOnly;
    for (size_t j = i + 1; j + 1 < parts.size(); ++j)
      if (parts[j] == "logs" && (anyDepth || j == i + 1)) return GitFileKind::UrlsOnly;
  }
  return GitFileKind::None;
}

bool isGitConfigPath(std::string_view rel) {
  std::string_view base = baseName(rel);
  return (base == "config" || base == "config.worktree") && gitFileKind(rel) == GitFileKind::RepoConfig;
}

std::string stripGitCredentials(std::string_view text, size_t& edits) {
  edits = 0;
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    std::string joined = nextLogicalLine(text, pos);
    std::string_view raw = text.substr(start, pos - start);
    if (secretKey(joined)) {
      ++edits;
      continue;
    }
    std::string kept(joined);
    size_t n = stripUserinfo(kept);
    if (n == 0) {
      out += raw;
      continue;
    }
    edits += n;
    bool single = raw.find('\n') == std::string_view::npos || raw.find('\n') + 1 == raw.size();
    if (single) {  // stripped in place: the line ending stays
      std::string line(raw);
      stripUserinfo(line);
      out += line;
    } else {  // a URL split by "\": written joined
      out += kept;
      out += '\n';
    }
  }
  return out;
}

namespace {

/// A section header's name and whether it has a subsection
/// ([remote "origin"], the old [remote.origin]); nullopt for a line that is
/// not a header.
struct SectionHead {
  std::string name;  ///< lower case
  bool sub = false;
  size_t end = 0;    ///< past the ']' in the line
};

std::optional<SectionHead> sectionHead(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] != '[') return std::nullopt;
  size_t close = line.find(']', i);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view head = trim(line.substr(i + 1, close - i - 1));
  size_t cut = head.find_first_of(" \t\".");
  return SectionHead{lower(head.substr(0, cut)), cut != std::string_view::npos, close + 1};
}

/// Whether `key` (lower case) of section `section` (lower case; `sub`: it
/// has a subsection) stays in a sanitized repository config.
bool keptInRepoConfig(const std::string& section, bool sub, const std::string& key, std::string_view value) {
  static const std::set<std::string> kCoreDropped = {
      "sshcommand", "pager", "editor", "fsmonitor", "hookspath", "alternaterefscommand", "askpass", "gitproxy",
      "attributesfile", "excludesfile", "worktree"};
  static const std::set<std::string> kRemoteKept = {"url", "pushurl", "fetch", "push", "mirror", "tagopt", "prune",
                                                    "prunetags"};
  static const std::set<std::string> kWhole = {"extensions", "branch", "fetch", "push", "pull", "color", "log",
                                               "rerere", "rebase", "tag", "pack", "gc", "status", "index", "advice"};
  if (section == "core") return !sub && !kCoreDropped.contains(key);
  if (section == "remote") return sub && kRemoteKept.contains(key);
  if (section == "user") return !sub && (key == "name" || key == "email");
  if (section == "submodule") return !(key == "update" && unquote(value).starts_with('!'));
  if (section == "merge") return !sub;
  if (section == "diff") return !sub && key != "external" && key != "tool" && key != "guitool";
  if (section == "init") return !sub && key != "templatedir";
  return kWhole.contains(section);
}

}  // namespace

namespace {

/// A dropped key's name as `airlock info` may show it: a name that is not
/// git's key syntax ([a-z0-9-], at most 64) or looks like a token is
/// never shown (a bare word on a line of its own is a boolean key).
std::string shownKeyName(const std::string& section, bool sub, const std::string& key) {
  auto plain = [](const std::string& s) {
    return !s.empty() && s.size() <= 64 && !startsLikeToken(s) &&
           s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
  };
  if (!plain(section) || !plain(key)) return "(a key that is not git's syntax)";
  return section + (sub ? ".*." : ".") + key;
}

}  // namespace

std::string sanitizeRepoConfig(std::string_view text, size_t& edits, std::vector<std::string>* dropped) {
  edits = 0;
  std::set<std::string> droppedKeys;
  std::string out;
  out.reserve(text.size());
  std::string section, header;  // header: the current section's line, until a key of it is kept
  bool sub = false, headerOut = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    std::string line = nextLogicalLine(text, pos);
    std::string_view raw = text.substr(start, pos - start);
    if (auto head = sectionHead(line)) {
      if (!header.empty() && !headerOut) ++edits;  // the previous section kept nothing
      section = head->name;
      sub = head->sub;
      headerOut = false;
      std::string_view rest = trim(std::string_view(line).substr(head->end));
      if (rest.empty()) {
        header = std::string(raw);  // its line ending as it was
        if (!header.ends_with('\n')) header += '\n';
        continue;
      }
      header = line.substr(0, head->end) + "\n";
      line = std::string(rest);  // a key on the header's line, judged as a line of its own
      raw = {};
    }
    ConfigLine l = splitLine(line);
    if (l.key.empty()) {
      if (trim(line).empty())
        out += raw.empty() ? std::string_view("\n") : raw;
      else
        ++edits;  // a comment: it may hold anything
      continue;
    }
    if (header.empty() || !keptInRepoConfig(section, sub, l.key, l.value)) {
      ++edits;
      if (!header.empty()) droppedKeys.insert(shownKeyName(section, sub, lower(l.key)));
      continue;
    }
    if (!headerOut) {
      out += header;
      headerOut = true;
    }
    if (raw.empty())
      out += "\t" + line + "\n";
    else
      out += raw;
  }
  if (!header.empty() && !headerOut) ++edits;
  if (dropped) dropped->assign(droppedKeys.begin(), droppedKeys.end());
  return out;
}

std::string stripUrlUserinfo(std::string_view text, size_t& edits) {
  edits = 0;
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string line(text.substr(pos, next - pos));
    pos = next;
    edits += stripUserinfo(line);
    out += line;
  }
  return out;
}

GitConfigRefs gitConfigRefs(std::string_view text) {
  GitConfigRefs refs;
  std::string section;
  size_t pos = 0;
  while (pos < text.size()) {
    std::string line = nextLogicalLine(text, pos);
    ConfigLine l = splitLine(line);  // views into `line`
    if (!l.section.empty()) section = l.section;
    if (l.key.empty()) continue;
    if ((section == "include" || section == "includeif") && l.key == "path") {
      refs.includes.emplace_back(unquote(l.value));
    } else if (section == "credential" && l.key == "helper") {
      std::string_view v = unquote(l.value);
      size_t b = v.find_first_not_of(" \t");
      if (b == std::string_view::npos) continue;
      v = v.substr(b);
      size_t e = v.find_first_of(" \t");
      std::string_view cmd = v.substr(0, e);
      if (cmd != "store" && !cmd.ends_with("git-credential-store")) continue;
      for (size_t f = v.find("--file"); f != std::string_view::npos; f = v.find("--file", f + 6)) {
        std::string_view arg = trim(v.substr(f + 6));
        if (arg.starts_with('=')) arg = trim(arg.substr(1));
        arg = arg.substr(0, arg.find_first_of(" \t"));
        if (arg.size() >= 2 && (arg.front() == '\'' || arg.front() == '"') && arg.back() == arg.front())
          arg = arg.substr(1, arg.size() - 2);
        if (!arg.empty()) refs.stores.emplace_back(arg);
      }
    }
  }
  return refs;
}

std::string resolveGitPath(std::string_view path, std::string_view baseDir, std::string_view workspaceRoot) {
  if (path.empty() || path.front() == '~') return "";
  std::vector<std::string_view> out;
  if (path.front() == '/') {
    std::string prefix(workspaceRoot);
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    prefix += '/';
    if (!path.starts_with(prefix)) return "";
    path.remove_prefix(prefix.size());
  } else if (!baseDir.empty()) {
    out = components(baseDir);
  }
  for (std::string_view c : components(path)) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (out.empty()) return "";
      out.pop_back();
      continue;
    }
    out.push_back(c);
  }
  std::string rel;
  for (std::string_view c : out) {
    if (!rel.empty()) rel += '/';
    rel += c;
  }
  return rel;
}

}  // namespace airlock::workspace
