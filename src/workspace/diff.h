#pragma once
// The three-way diff: for every path the agent touched, compare the baseline
// (the manifest at snapshot time), the agent's result (the change set) and
// the live workspace now. A path the user changed on the host since the
// snapshot is a conflict. Work is proportional to the number of changed
// paths: only they (and baseline entries below deleted or opaque
// directories) are inspected on disk.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "workspace/changeset.h"
#include "workspace/ignore.h"
#include "workspace/manifest.h"
#include "workspace/safe_fs.h"

namespace airlock::workspace {

/// What the agent did to one path.
enum class ChangeKind {
  Added, Modified, ModeChanged, Deleted,
  SymlinkAdded, SymlinkChanged, SymlinkRemoved,
  TypeChanged, DirAdded, DirRemoved,
  Skipped,  ///< not reviewable (FIFO, socket, device node, oversized file): reported, never flushed
};

/// Short name for tables and JSON ("added", "mode changed", ...).
const char* changeKindName(ChangeKind k);

/// One path's state on one side of the diff.
struct Side {
  bool exists = false;
  EntryType type = EntryType::File;
  uint32_t mode = 0;    ///< permission bits
  uint64_t size = 0;    ///< bytes (files)
  std::string sha256;   ///< files
  std::string target;   ///< symlinks
};

/// One reviewable change.
struct DiffItem {
  std::string path;
  ChangeKind kind = ChangeKind::Added;
  Side base, agent, live;
  std::string staged;              ///< agent content in the staging dir (files)
  bool conflict = false;           ///< live differs from baseline and from the agent's result
  std::string conflictReason;      ///< one sentence when conflict
  IgnoreVerdict excluded = IgnoreVerdict::Included;  ///< excluded paths are never flushed
  bool binary = false;             ///< either side has a NUL byte in its first 8,000 bytes
  bool tooLarge = false;           ///< a side exceeds the diff size cap: summary only
  bool comparedWithHost = false;   ///< the baseline content is gone (a session's snapshot copy goes when it ends)
                                   ///< and the host file changed: lines and patch are against the host's file now
  bool baseGone = false;           ///< the baseline content is gone and the host's file cannot stand in: summary only
  uint64_t linesAdded = 0, linesRemoved = 0;
  bool specialBitsDropped = false; ///< the agent set setuid/setgid/sticky; they are stripped
  bool linkEscapes = false;        ///< symlink target leaves the workspace (lexically; classifyItems() resolves it)
  bool controlChars = false;       ///< an added line (or a symlink target) holds control, bidi or invisible characters (shown escaped)
  bool heldBack = false;           ///< set by classifyItems(): runs code later, needs explicit review
  std::string heldBackAs;          ///< set by classifyItems(): the held-back path it is reached as, when not its own
  bool linkUnresolvable = false;   ///< set by classifyItems(): symlink loops, exceeds 40 hops, dangles via a link,
                                   ///< passes a path the model lacks, or the resolver budget ran out
  bool gitMetadata = false;        ///< set by classifyItems(): at or below a .git or a git dir, or a link into one; never flushed
  bool buildEntry = false;         ///< set by classifyItems(): build entry point, flagged
  std::string skipReason;          ///< kind Skipped: why ("FIFO; only files, directories and symlinks are reviewed")
};

/// The mode a file or directory lands with on flush (setuid/setgid/sticky stripped).
uint32_t landingMode(const Side& s);

/// The diff of a whole change set.
struct DiffResult {
  std::vector<DiffItem> items;   ///< ordered by path
  size_t alreadyApplied = 0;     ///< changes the live workspace already has (nothing to do)
};

/// Computes and renders three-way diffs. Holds references only.
class ThreeWayDiff {
 public:
  /// `workspaceFd`: the live workspace root; `baselineContentFd`: the snapshot
  /// copy (for showing old content), or -1. `maxDiffBytes`: size cap per side.
  /// `umask`: the user's file creation mask (the cli reads it), cleared from
  /// the agent's mode of every file or directory the flush creates (a path
  /// with no entry of that type in the baseline), so the mode the diff shows
  /// is the mode that lands; modes of existing paths land as the agent set them.
  ThreeWayDiff(const Manifest& baseline, const ChangeSet& changes, const IgnoreRules& rules, int workspaceFd,
               int baselineContentFd = -1, uint64_t maxDiffBytes = 1 << 20, uint32_t umask = 0)
      : baseline_(baseline), changes_(changes), rules_(rules), workspaceFd_(workspaceFd),
        baselineFd_(baselineContentFd), maxDiffBytes_(maxDiffBytes), umask_(umask & 0777) {}

  /// Builds the item list, with the change set's skipped entries as items of
  /// kind Skipped. Fails with exit_code::kUnsafeChangeSet when the change set
  /// contradicts the baseline (an entry below a baseline symlink or file that
  /// the change set keeps).
  Result<DiffResult> run() const;

  /// The unified diff (libgit2, with git's mode lines) or a one-paragraph
  /// summary for non-text changes (sizes and SHA-256 for binary files),
  /// after a header naming the mode that lands (and ", executable").
  /// Content is shown through visibleText() (tabs kept): every line with an
  /// escape ends in kEscapedMark, and the only escape sequences in the result
  /// are airlock's own colors (`color`).
  Result<std::string> patch(const DiffItem& item, bool color) const;

 private:
  Result<> fill(DiffItem& item) const;
  Result<std::string> baseContent(const DiffItem& item) const;
  /// The host's file at the item's path as it is now, the "before" of a
  /// patch whose baseline content is gone; nullopt unless it is a regular
  /// file within the size cap.
  std::optional<std::string> hostContent(const DiffItem& item) const;

  const Manifest& baseline_;
  const ChangeSet& changes_;
  const IgnoreRules& rules_;
  int workspaceFd_;
  int baselineFd_;
  uint64_t maxDiffBytes_;
  uint32_t umask_;
};

/// Ends every diff line that had a character shown as an escape.
inline constexpr std::string_view kEscapedMark = "  [escaped control characters]";

/// The live state of `rel` as a diff Side (hashing regular files).
Result<Side> liveSide(int workspaceFd, std::string_view rel);

}  // namespace airlock::workspace
