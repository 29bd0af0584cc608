#include "workspace/git_credentials.h"

#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
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

/// True for the key of a `key = value` line that holds a secret.
bool secretKey(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return false;
  if (line[i] == '[') {  // "[section] key = value" on one line
    size_t close = line.find(']', i);
    if (close == std::string_view::npos) return false;
    return secretKey(line.substr(close + 1));
  }
  size_t end = line.find_first_of(" \t=", i);
  std::string key = lower(line.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
  if (key.empty() || key[0] == '[' || key[0] == '#' || key[0] == ';') return false;
  return key == "extraheader" || key == "smtppass" || key.ends_with("token") || key.ends_with("password") ||
         key.ends_with("passwd");
}

}  // namespace

bool isGitConfigPath(std::string_view rel) {
  std::string_view base = baseName(rel);
  if (base != "config" && base != "config.worktree") return false;
  std::string_view dirs = rel.substr(0, rel.size() - base.size());
  return dirs.starts_with(".git/") || dirs.find("/.git/") != std::string_view::npos;
}

std::string stripGitCredentials(std::string_view text, size_t& edits) {
  edits = 0;
  std::string out;
  out.reserve(text.size());
  bool dropping = false;  // inside a dropped line's "\" continuations
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(pos, next - pos);
    pos = next;
    std::string_view body = line;
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.remove_suffix(1);
    bool continues = body.ends_with('\\');
    if (dropping || secretKey(body)) {
      if (!dropping) ++edits;
      dropping = continues;
      continue;
    }
    std::string kept(line);
    edits += stripUserinfo(kept);
    out += kept;
  }
  return out;
}

}  // namespace airlock::workspace
