#pragma once
// Helpers for the workspace tests: scratch directories, files, tar streams.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/paths.h"
#include "support/tar_builder.h"
#include "workspace/changeset.h"
#include "workspace/diff.h"
#include "workspace/flush.h"
#include "workspace/manifest.h"
#include "workspace/review.h"
#include "workspace/snapshot.h"

namespace airlock::workspace::test {

/// A scratch directory under $TMPDIR (or /tmp), removed at the end of the test.
TempDir scratch();

/// Writes `content` to `path` (creating parents) with `mode`.
void writeFile(const std::string& path, const std::string& content, unsigned mode = 0644);

/// Reads a whole file; "" when missing.
std::string readAll(const std::string& path);

/// Runs a bash command line; returns its stdout (trailing newlines removed).
/// A non-zero exit fails the test.
std::string sh(const std::string& cmd);

/// git in `dir` with a fixed identity (Agent <agent@example.com>), branch
/// main by default and no user or system config; stdout and stderr.
std::string git(const std::string& dir, const std::string& args);

using airlock::test::makeSparseLinkTar;
using airlock::test::makeTar;
using airlock::test::TarEntry;

/// Bytes a file or directory tree really occupies on disk (st_blocks * 512).
uint64_t diskBytes(const std::string& path);

/// A canonical listing of a directory tree: "path type mode content-or-target", one per line.
std::string treeListing(const std::string& root);

/// One workspace + session + state dir, and the pipeline steps on them.
struct Scenario {
  Scenario();
  TempDir dir;
  std::string ws, session, state;
  IgnoreRules rules;
  Manifest baseline;
  std::optional<ChangeSet> changes;
  Fd wsFd, snapFd;
  uint32_t umask = 0;  ///< the user's umask the diff applies to created paths
  std::optional<FileOwner> owner;  ///< FlushContext::owner of flushAll()
  ProgressFn waiting;              ///< FlushContext::waiting of flushAll()

  /// Snapshot of ws into session/snapshot; sets baseline.
  void snapshot();
  /// Loads a change set from an in-memory tar; returns the error text or "".
  std::string loadTar(const std::string& tar);
  /// Change set = snapshot copy -> `after` directory.
  void loadDirs(const std::string& after);
  /// The three-way diff (items classified).
  DiffResult diff();
  /// A diff engine bound to this scenario (valid while it lives).
  std::unique_ptr<ThreeWayDiff> engine();
  /// Flushes every item of `d`.
  Result<struct FlushReport> flushAll(const DiffResult& d, const struct FlushHooks& hooks);
};

}  // namespace airlock::workspace::test
