#pragma once
// Where agent state lives on the host (issue 16):
// <data>/state/<agent>/<key>/, one directory per (agent, project), where
// <key> is the first 16 hex digits of the SHA-256 of the project's real
// path. Inside: home/ (the saved tree, state_archive.h) and project (the
// path, one line).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace airlock::state {

/// The directory of `agent`'s state for the project at the real path
/// `project`, under the data directory `dataDir` (HostDirs::data).
std::string stateDirFor(const std::string& dataDir, const std::string& agent, const std::string& project);

/// One saved state, as `airlock state ls` shows it.
struct SavedState {
  std::string agent;
  std::string project;  ///< the project's real path ("" when its record is missing)
  std::string dir;      ///< its directory
  uint64_t bytes = 0;   ///< file contents under dir/home
  std::chrono::system_clock::time_point lastUsed;  ///< when it was last saved
};

/// `agent`'s saved state for the project at the real path `project`;
/// nullopt when there is none.
std::optional<SavedState> findState(const std::string& dataDir, const std::string& agent, const std::string& project);

/// Every saved state under `dataDir` (of `agent` only, when not empty),
/// sorted by agent then project. A missing state directory is no state.
Result<std::vector<SavedState>> listStates(const std::string& dataDir, const std::string& agent);

}  // namespace airlock::state
