#pragma once
// The user's own agent settings (issue 16, item 2): the files and
// directories an agent spec lists under `settings` (agents::SettingsImport),
// read from the host's $HOME and copied into the guest read-only at each
// run. Nothing is ever written back to the host's dirs.
//
// What is copied: regular files and directories (symlinks followed, as a
// dotfile manager makes them; a loop is seen once), plain UTF-8 names. Never
// a file the snapshot would keep out as a secret (.env, keys, credentials:
// workspace/ignore.h) by its path under $HOME or its real path, one holding
// a private key (workspace/private_key_scan.h), git metadata, a hard link,
// or anything that resolves into /proc, /sys, /dev, /run or airlock's own
// directories.
// JSON files with `keys` keep only those top-level keys, and a kept "env"
// object loses the variables that may hold secrets (by name or by value:
// a URL with a password, a bearer token, a known token prefix) or that
// airlock itself sets or forwards. Everything left out is reported, one line each.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agents/agent_spec.h"
#include "common/error.h"

namespace airlock::state {

/// Bounds of one agent's imported settings.
struct SettingsLimits {
  uint64_t maxFileBytes = uint64_t{1} << 20;  ///< one file
  uint64_t maxBytes = uint64_t{16} << 20;     ///< all files, summed
  uint64_t maxEntries = 2000;                 ///< files and directories
  unsigned maxDepth = 16;                     ///< directory levels below a settings path
};

/// One file or directory as it goes into the guest.
struct SettingsEntry {
  std::string path;  ///< relative to $HOME; parents come before children
  bool directory = false;
  std::string content;  ///< a file's bytes
  bool executable = false;  ///< a file with any x bit on the host (a skill's script)
};

/// The user's settings for one agent.
struct ImportedSettings {
  std::vector<SettingsEntry> entries;
  /// One line per settings path found: "~/.claude/CLAUDE.md",
  /// "~/.claude/skills (3 files)".
  std::vector<std::string> imported;
  /// One line per thing left out: "~/.claude/settings.json: apiKeyHelper
  /// (not on the agent's list of keys)".
  std::vector<std::string> dropped;
};

/// Reads `settings` from the home directory `home`. `ownedEnv` are the
/// variables airlock sets or forwards for the agent (names, or prefixes
/// ending in '*'): a settings "env" block does not get to change them.
/// `neverDirs`: directories nothing is copied from, whatever links there
/// (airlock's own: secrets, sessions, states). A missing path is skipped
/// silently; an unreadable one, a JSON file that is not a JSON object, or
/// one past the limits is left out and reported.
ImportedSettings importSettings(const std::string& home, const std::vector<agents::SettingsImport>& settings,
                                const std::vector<std::string>& ownedEnv, const std::vector<std::string>& neverDirs,
                                const SettingsLimits& limits = {});

/// `entries` as a tar stream for the guest's tar to unpack in $HOME: owned
/// by `uid`:`uid`, directories 0755, files 0644 (0755 when executable).
Result<std::string> packSettings(const std::vector<SettingsEntry>& entries, uint32_t uid);

/// The JSON object `over` merged into the JSON object `base` (objects merge
/// key by key, recursively; anything else in `over` replaces), as indented
/// JSON. Used for a settings file that is also one of airlock's home files:
/// airlock's keys win. Fails when either is not a JSON object (comments are
/// allowed, as in Gemini's settings).
Result<std::string> mergeJsonObjects(const std::string& base, const std::string& over);

}  // namespace airlock::state
