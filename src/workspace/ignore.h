#pragma once
// Which workspace paths airlock leaves alone: never copied into the snapshot,
// never touched by a flush. Three sources, checked in this order:
//  1. the built-in secret patterns (cannot be negated by anything): the one
//     list is IgnoreRules::secretPatterns() in ignore.cc, grouped as
//     environment files and near names (.env.*, .env-*, .envs/, *.env), private keys and key
//     stores (*.pem, *.key, *.key.*, *.ppk, id_rsa*, secring.*...), credential
//     directories (.ssh/, .aws/, .gnupg/...), tools' credential and token
//     files (.netrc, .npmrc, .pgpass, .my.cnf, .s3cfg, .dockercfg, kubeconfig*,
//     auth.json, service-account*.json, .cargo/credentials*...), Terraform
//     state and credentials, and shell/REPL/editor histories. They match
//     case-insensitively (.ENV, .Env.local), with each component's trailing
//     spaces and dots removed (".env ", ".env."), and also with one backup
//     suffix removed, numbered or not (.netrc~, credentials.json.bak,
//     .id_rsa.swp, .netrc.1, .npmrc.bak2). Content-based
//     exclusions (private keys in files of any name, hard links to excluded
//     files) are the snapshot's (snapshot.h),
//  2. airlock's own config files (.airlock.yaml, .airlockignore; same rule),
//  3. user patterns: `.airlockignore` at the workspace root, then --exclude
//     flags, in gitignore syntax (last match wins, '!' re-includes).

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::workspace {

/// One compiled gitignore-style pattern.
struct IgnorePattern {
  std::string glob;      ///< pattern text with escapes kept, no leading '/' or trailing '/'
  bool negate = false;   ///< '!' prefix: re-include
  bool dirOnly = false;  ///< trailing '/': matches directories only
  bool anchored = false; ///< contains '/': matched against the whole relative path
};

/// Matches `text` against a gitignore glob: '*' and '?' stop at '/', "[a-z]"
/// classes ('!' or '^' negates), '\' escapes, "**/" = zero or more
/// directories, "/**" = everything inside, any other "**" = '*'.
/// Runs in O(|glob| * |text|) time however hostile the inputs.
bool globMatch(std::string_view glob, std::string_view text);

/// Parses one line of gitignore syntax. Returns false for blank lines and
/// comments. Trailing spaces are dropped unless escaped ("\ ").
bool parseIgnoreLine(std::string_view line, IgnorePattern& out);

/// The verdict for one path.
enum class IgnoreVerdict {
  Included,  ///< part of the workspace
  Ignored,   ///< excluded by .airlockignore or --exclude
  Secret,    ///< a secret or an airlock config file: excluded, cannot be negated
};

/// The complete rule set for one workspace.
class IgnoreRules {
 public:
  /// The built-in secret patterns, in gitignore syntax (listed in README.md).
  static const std::vector<std::string>& secretPatterns();
  /// airlock's own config file names, excluded everywhere like secrets.
  static const std::vector<std::string>& configPatterns();
  /// True when the last component of `rel` is one of configPatterns() (any case).
  static bool isAirlockConfig(std::string_view rel);

  /// Adds every line of `text` (gitignore syntax) as user patterns.
  void addLines(std::string_view text);

  /// Adds one user pattern (e.g. from --exclude). A negation of a path the
  /// built-in secret/config rules exclude adds a warning (it does nothing).
  void addPattern(std::string_view line);

  /// Reads `.airlockignore` at the root of the directory `rootFd`, if present
  /// (never through a symlink). Fails when it exists but cannot be read.
  Result<> loadFile(int rootFd);

  /// Verdict for `rel`, checking every ancestor directory too: a path below an
  /// excluded directory is excluded (it cannot be re-included, as in git).
  IgnoreVerdict match(std::string_view rel, bool isDir) const;

  /// Verdict for `rel` alone, for tree walks that already checked its parents.
  IgnoreVerdict matchEntry(std::string_view rel, bool isDir) const;

  /// The user pattern lines, one per line, to keep in the session directory.
  const std::string& userText() const { return userText_; }

  /// One sentence per user pattern that has no effect (for the cli to print
  /// as "airlock: warning: ...").
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<std::string> warnings_;
  std::vector<IgnorePattern> user_;
  std::string userText_;
};

}  // namespace airlock::workspace
