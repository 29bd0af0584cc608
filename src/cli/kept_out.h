#pragma once
// What the snapshot keeps out of the guest, as `airlock info` reports it: the
// "kept out" lines of the text form and the "kept_out" object of --json.
// Counts always; the paths only with --excluded (names only on request).

#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "config/settings.h"
#include "workspace/snapshot.h"

namespace airlock::cli {

/// What `airlock run` would keep out of the snapshot of `workspace` (its
/// .airlockignore and `settings.excludes` applied): from the walk alone
/// (names, ignores, hard links: no file is read), or with `readFiles`
/// (--excluded) from every file's content too. Fails on an unreadable
/// .airlockignore (kHostNotReady) or workspace.
Result<workspace::SnapshotResult> keptOut(const std::string& workspace, const config::Settings& settings,
                                          bool readFiles);

/// The "kept out" lines of the text report; `listed`: one line per path.
std::string keptOutText(const workspace::SnapshotResult& res, bool listed);

/// The "kept_out" object of the JSON report; `listed` adds "paths" and "git_configs".
nlohmann::json keptOutJson(const workspace::SnapshotResult& res, bool listed);

}  // namespace airlock::cli
