#include "workspace/ignore.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "common/fd.h"
#include "workspace/relpath.h"
#include "workspace/safe_fs.h"

namespace airlock::workspace {
namespace {

// Memoized recursive matcher; `failed` records (p, t) states known not to match.
class Matcher {
 public:
  Matcher(std::string_view p, std::string_view t) : p_(p), t_(t) {}
  bool run() { return step(0, 0); }

 private:
  // Memoized entry for the branches a '*' opens; the table is allocated on
  // the first star only, so literal patterns cost no allocation.
  bool match(size_t p, size_t t) {
    size_t cells = (p_.size() + 1) * (t_.size() + 1);
    if (failed_.empty()) failed_.assign(cells, 0);
    uint8_t& memo = failed_[p * (t_.size() + 1) + t];
    if (memo) return false;
    bool ok = step(p, t);
    if (!ok) failed_[p * (t_.size() + 1) + t] = 1;
    return ok;
  }

  bool step(size_t p, size_t t) {
    while (p < p_.size()) {
      char c = p_[p];
      if (c == '*') {
        size_t q = p;
        while (q < p_.size() && p_[q] == '*') ++q;
        bool doubleStar = q - p >= 2;
        bool startOk = p == 0 || p_[p - 1] == '/';
        bool endOk = q == p_.size() || p_[q] == '/';
        if (doubleStar && startOk && endOk) {
          if (q == p_.size()) return true;
          // "**/": zero or more whole directories.
          for (size_t s = t;;) {
            if (match(q + 1, s)) return true;
            size_t slash = t_.find('/', s);
            if (slash == std::string_view::npos) return false;
            s = slash + 1;
          }
        }
        for (size_t s = t;; ++s) {
          if (match(q, s)) return true;
          if (s == t_.size() || t_[s] == '/') return false;
        }
      }
      if (t == t_.size()) return false;
      if (c == '?') {
        if (t_[t] == '/') return false;
        ++p, ++t;
      } else if (c == '[') {
        size_t end = 0;
        int r = matchClass(p, t_[t], end);
        if (r < 0) {  // no closing ']': a literal '['
          if (t_[t] != '[') return false;
          ++p, ++t;
        } else {
          if (r == 0 || t_[t] == '/') return false;
          p = end, ++t;
        }
      } else if (c == '\\') {
        if (p + 1 == p_.size()) return false;
        if (t_[t] != p_[p + 1]) return false;
        p += 2, ++t;
      } else {
        if (t_[t] != c) return false;
        ++p, ++t;
      }
    }
    return t == t_.size();
  }

  // Returns 1 match, 0 no match, -1 unterminated class; `end` = index after ']'.
  int matchClass(size_t p, char ch, size_t& end) {
    size_t i = p + 1;
    bool negate = false;
    if (i < p_.size() && (p_[i] == '!' || p_[i] == '^')) negate = true, ++i;
    bool matched = false;
    bool first = true;
    while (i < p_.size() && (first || p_[i] != ']')) {
      first = false;
      unsigned char lo = static_cast<unsigned char>(p_[i]);
      if (p_[i] == '\\' && i + 1 < p_.size()) lo = static_cast<unsigned char>(p_[++i]);
      ++i;
      unsigned char hi = lo;
      if (i + 1 < p_.size() && p_[i] == '-' && p_[i + 1] != ']') {
        hi = static_cast<unsigned char>(p_[i + 1]);
        if (p_[i + 1] == '\\' && i + 2 < p_.size()) hi = static_cast<unsigned char>(p_[++i + 1]);
        i += 2;
      }
      auto u = static_cast<unsigned char>(ch);
      if (u >= lo && u <= hi) matched = true;
    }
    if (i >= p_.size()) return -1;
    end = i + 1;
    return matched != negate ? 1 : 0;
  }

  std::string_view p_, t_;
  std::vector<uint8_t> failed_;
};

/// Backup and swap-file suffixes: "NAME~", "NAME.bak"... of a secret NAME is a secret.
constexpr std::string_view kBackupSuffixes[] = {"~", ".bak", ".backup", ".old", ".orig", ".save", ".swp", ".tmp"};

/// `s` with ASCII letters lowered (the built-in patterns are lower case) and
/// the trailing spaces and dots of each component removed (".env " and
/// ".env." name the same secret to a user and to Windows tools); a component
/// of only dots and spaces stays as it is.
std::string foldCase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t slash = s.find('/', pos);
    if (slash == std::string_view::npos) slash = s.size();
    std::string_view part = s.substr(pos, slash - pos);
    size_t keep = part.find_last_not_of(". ");
    if (keep != std::string_view::npos) part = part.substr(0, keep + 1);
    for (char c : part) out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    if (slash < s.size()) out.push_back('/');
    pos = slash + 1;
  }
  return out;
}

bool digit(char c) { return c >= '0' && c <= '9'; }

/// `rel` without one backup suffix (and the leading '.' vim gives a swap
/// file: ".id_rsa.swp" -> "id_rsa"), a numbered one too (".netrc.1",
/// ".npmrc.bak2", "x.orig3"); "" when it has none.
std::string withoutBackupSuffix(std::string_view rel) {
  size_t d = rel.size();
  while (d > 0 && digit(rel[d - 1])) --d;
  if (d < rel.size() && d > 0) {
    std::string_view head = rel.substr(0, d);
    if (head.ends_with('.') && !baseName(head.substr(0, d - 1)).empty()) return std::string(head.substr(0, d - 1));
    for (std::string_view suffix : kBackupSuffixes)
      if (suffix != "~" && head.ends_with(suffix)) return withoutBackupSuffix(head);
  }
  for (std::string_view suffix : kBackupSuffixes) {
    if (rel.size() <= suffix.size() || !rel.ends_with(suffix)) continue;
    std::string out(rel.substr(0, rel.size() - suffix.size()));
    if (baseName(out).empty()) return "";
    if (suffix == ".swp") {
      size_t base = out.size() - baseName(out).size();
      if (out[base] == '.' && out.size() - base > 1) out.erase(base, 1);
    }
    return out;
  }
  return "";
}

/// True when `c` starts a glob literally (no wildcard, class or escape).
bool literalStart(char c) { return c != '*' && c != '?' && c != '[' && c != '\\'; }

bool patternMatches(const IgnorePattern& pat, std::string_view rel, bool isDir) {
  if (pat.dirOnly && !isDir) return false;
  std::string_view text = pat.anchored ? rel : baseName(rel);
  // Cheap rejections first: every path is checked against every built-in pattern.
  if (!pat.glob.empty() && literalStart(pat.glob[0]) && (text.empty() || text[0] != pat.glob[0])) return false;
  return globMatch(pat.glob, text);
}

std::vector<IgnorePattern> compile(const std::vector<std::string>& lines) {
  std::vector<IgnorePattern> out;
  for (const auto& l : lines) {
    IgnorePattern p;
    if (!parseIgnoreLine(l, p)) continue;
    p.dirOnly = false;  // a secret name is excluded whatever its type
    out.push_back(std::move(p));
  }
  return out;
}

const std::vector<IgnorePattern>& builtin() {
  static const std::vector<IgnorePattern> all = [] {
    auto v = compile(IgnoreRules::secretPatterns());
    auto c = compile(IgnoreRules::configPatterns());
    v.insert(v.end(), c.begin(), c.end());
    return v;
  }();
  return all;
}

/// The built-in rule (as listed in secretPatterns()/configPatterns()) that
/// excludes `rel` or one of its ancestors; "" when none does.
std::string secretRuleFor(std::string_view rel) {
  std::vector<std::string> lines = IgnoreRules::secretPatterns();
  for (const auto& c : IgnoreRules::configPatterns()) lines.push_back(c);
  const auto& pats = builtin();
  std::string lowered = foldCase(rel);
  for (size_t end = 0; end <= lowered.size(); ++end) {
    if (end < lowered.size() && lowered[end] != '/') continue;
    std::string_view prefix = std::string_view(lowered).substr(0, end);
    for (size_t i = 0; i < pats.size() && i < lines.size(); ++i)
      if (patternMatches(pats[i], prefix, end < lowered.size())) return lines[i];
  }
  return "";
}

}  // namespace

bool globMatch(std::string_view glob, std::string_view text) { return Matcher(glob, text).run(); }

bool parseIgnoreLine(std::string_view line, IgnorePattern& out) {
  out = IgnorePattern{};
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty() || line.front() == '#') return false;
  // Drop unescaped trailing spaces.
  while (!line.empty() && line.back() == ' ') {
    size_t backslashes = 0;
    for (size_t i = line.size() - 1; i > 0 && line[i - 1] == '\\'; --i) ++backslashes;
    if (backslashes % 2 == 1) break;
    line.remove_suffix(1);
  }
  if (line.empty()) return false;
  if (line.front() == '!') {
    out.negate = true;
    line.remove_prefix(1);
  }
  if (!line.empty() && line.back() == '/') {
    out.dirOnly = true;
    while (!line.empty() && line.back() == '/') line.remove_suffix(1);
  }
  if (line.find('/') != std::string_view::npos) out.anchored = true;
  while (!line.empty() && line.front() == '/') line.remove_prefix(1);
  if (line.empty() || line.size() > 4096) return false;
  out.glob = std::string(line);
  return true;
}

const std::vector<std::string>& IgnoreRules::secretPatterns() {
  // The one list of built-in secret names (README.md "Secrets" copies it).
  // Lower case: matched against the ASCII-lowercased path. Each is also
  // matched with a backup suffix removed (see kBackupSuffixes).
  static const std::vector<std::string> v = {
      // Environment files and their near names: .env.local, .env-local, .env_prod, .envs/, prod.env
      // (.env~ by its backup suffix). Not .envrc: direnv's script, held back at review instead.
      ".env", ".env.*", ".env-*", ".env_*", ".envs/", "*.env", "env.local", ".dev.vars", ".flaskenv",
      // Private keys, keystores, key rings and wallets.
      "*.pem", "*.key", "*.key.*", "*.p12", "*.pfx", "*.p8", "*.jks", "*.jceks", "*.keystore", "*.truststore",
      "*.ppk", "*.keytab", "*.kdbx", "*.keychain", "*.keychain-db", "id_rsa*", "id_ed25519*", "id_ecdsa*",
      "id_dsa*", "secring.*", "private-keys-v1.d/", "age-key.txt", "*.age", "wallet.dat",
      // Credential directories.
      ".ssh/", ".aws/", ".gcp/", ".gcloud/", ".azure/", ".oci/", ".gnupg/", ".password-store/", ".kaggle/",
      "**/.config/gcloud/",
      // Credential and token files of tools.
      "**/.config/gh/hosts.yml", "**/.config/hub", "credentials.json", "application_default_credentials.json",
      "*service-account*.json", "*service_account*.json", "*firebase-adminsdk*.json", ".git-credentials",
      "git-credentials", "**/.config/git/credentials", ".netrc",
      "_netrc", ".authinfo*", ".npmrc", ".yarnrc.yml", ".pypirc", "**/.docker/config.json", ".dockercfg",
      "**/.kube/config", "kubeconfig*", "*.kubeconfig", ".pgpass", ".my.cnf", ".s3cfg", ".boto", ".htpasswd",
      ".vault-token", "**/.cargo/credentials*", "**/.gem/credentials", "auth.json", "**/.m2/settings*.xml",
      "**/.gradle/gradle.properties", ".credentials", "rclone.conf", "**/huggingface/token", "token.json",
      "*.token", ".gh_token", "secrets.yaml", "secrets.yml", "secrets.json", "secrets.toml",
      "**/.claude/settings.local.json",
      // Coding agents' own logins (Claude Code, Gemini CLI, OpenCode, Copilot; Codex: auth.json above).
      ".credentials.json", "oauth_creds.json", "google_accounts.json", "mcp-oauth-tokens.json", "mcp-auth.json",
      "**/github-copilot/hosts.json", "**/github-copilot/apps.json",
      // Terraform state, variables and CLI credentials.
      "*.tfstate*", "*.tfvars", ".terraform/", ".terraformrc", "terraform.rc", "credentials.tfrc.json",
      // Shell, REPL and editor histories (typed passwords and tokens).
      ".*_history", "*_repl_history", ".zhistory", ".histfile", ".lesshst", "fish_history", ".viminfo",
  };
  return v;
}

const std::vector<std::string>& IgnoreRules::configPatterns() {
  static const std::vector<std::string> v = {".airlock.yaml", ".airlock.yml", ".airlockignore"};
  return v;
}

void IgnoreRules::addLines(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    addPattern(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

void IgnoreRules::addPattern(std::string_view line) {
  IgnorePattern p;
  if (!parseIgnoreLine(line, p)) return;
  if (p.negate) {
    if (std::string rule = secretRuleFor(p.glob); !rule.empty())
      warnings_.push_back(fmt::format("'{}' does nothing: the built-in secret rule '{}' always excludes it and cannot "
                                      "be negated",
                                      line, rule));
  }
  user_.push_back(std::move(p));
  userText_.append(line);
  userText_.push_back('\n');
}

Result<> IgnoreRules::loadFile(int rootFd) {
  Fd fd;
  int err = openBeneath(rootFd, ".airlockignore", O_RDONLY | O_NONBLOCK, 0, fd);
  if (err == ENOENT) return {};
  if (err != 0) return fail("cannot read .airlockignore: {}; make it a regular file or remove it", errnoText(err));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20))
    return fail(".airlockignore is not a regular file under 1 MiB; fix or remove it");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t n = readFull(fd.get(), text.data(), text.size());
  if (n < 0) return fail("cannot read .airlockignore: {}", errnoText(errno));
  text.resize(static_cast<size_t>(n));
  addLines(text);
  return {};
}

namespace {

bool matchesBuiltin(std::string_view lowered, bool isDir) {
  for (const auto& p : builtin())
    if (patternMatches(p, lowered, isDir)) return true;
  return false;
}

bool isSecret(std::string_view rel, bool isDir) {
  std::string lowered = foldCase(rel);
  if (matchesBuiltin(lowered, isDir)) return true;
  std::string plain = withoutBackupSuffix(lowered);
  return !plain.empty() && matchesBuiltin(plain, isDir);
}

}  // namespace

bool IgnoreRules::isAirlockConfig(std::string_view rel) {
  std::string lowered = foldCase(baseName(rel));
  for (const auto& c : configPatterns())
    if (lowered == c) return true;
  return false;
}

IgnoreVerdict IgnoreRules::matchEntry(std::string_view rel, bool isDir) const {
  if (isSecret(rel, isDir)) return IgnoreVerdict::Secret;
  bool ignored = false;
  for (const auto& p : user_)
    if (patternMatches(p, rel, isDir)) ignored = !p.negate;
  return ignored ? IgnoreVerdict::Ignored : IgnoreVerdict::Included;
}

IgnoreVerdict IgnoreRules::match(std::string_view rel, bool isDir) const {
  // Secrets first, on every ancestor and the path itself, so a secret is
  // reported as a secret even below a directory the user ignores.
  std::vector<size_t> slashes;
  for (size_t i = 0; i < rel.size(); ++i)
    if (rel[i] == '/') slashes.push_back(i);
  for (size_t s : slashes)
    if (isSecret(rel.substr(0, s), true)) return IgnoreVerdict::Secret;
  if (isSecret(rel, isDir)) return IgnoreVerdict::Secret;
  for (size_t s : slashes)
    if (matchEntry(rel.substr(0, s), true) != IgnoreVerdict::Included) return IgnoreVerdict::Ignored;
  return matchEntry(rel, isDir);
}

}  // namespace airlock::workspace
