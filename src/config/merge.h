#pragma once
// The three-level merge: built-in (the agent spec) < user config < repo
// config < flags, where the repo config can only tighten.
//
// Order of application: built-in values, then the user config, then the repo
// config (each repo value applies only when it is tighter than the value so
// far, so a repo can lower your vCPUs or force interactive review but never
// loosen anything), then flags (the operator always has the last word).
// Every repo value that is not applied is reported as an IgnoredKey.

#include <optional>
#include <string>
#include <vector>

#include "agents/agent_spec.h"
#include "common/error.h"
#include "config/settings.h"

namespace airlock::config {

/// A repo config value that was not applied, and why.
struct IgnoredKey {
  std::string file;    ///< the repo config's path
  std::string key;     ///< the key, with the value when one of a list ("allow_hosts: evil.example")
  std::string reason;  ///< one line, e.g. "a repo config cannot add egress hosts"

  bool operator==(const IgnoredKey&) const = default;
};

/// One line for the terminal: "<file>: ignored <key>: <reason>", the file
/// and the repo's key and value escaped with visibleText() (a hostile
/// .airlock.yaml must not write to the terminal).
std::string describe(const IgnoredKey& ignored);

/// The layers to merge.
struct ConfigSources {
  std::optional<ConfigLayer> user;  ///< the user config, if any
  std::string userPath;             ///< its path, for messages
  std::optional<ConfigLayer> repo;  ///< the repo config, if any
  std::string repoPath;             ///< its path, for ignored-key reports
  ConfigLayer flags;                ///< what the command line set
};

/// The effective settings and every ignored repo value.
struct Resolved {
  Settings settings;
  std::vector<IgnoredKey> ignored;
};

/// Merges `sources` over the built-in values of `agent` (vCPUs, memory,
/// forwarded variables; profile standard, snapshot mode). Never fails: every
/// value in a layer was validated when it was loaded.
Resolved resolve(const agents::AgentSpec& agent, const ConfigSources& sources);

/// The guards of direct mode, for a run: it must be confirmed (`yes`, i.e.
/// --yes, or direct_mode_acknowledged in the user config), and --review or
/// --exclude flags are refused because nothing is reviewed or excluded.
/// Fails with exit_code::kUsage saying what to change. A no-op in snapshot mode.
Result<> checkDirectMode(const Resolved& resolved, const ConfigSources& sources, bool yes);

}  // namespace airlock::config
