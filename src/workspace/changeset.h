#pragma once
// The agent's changes: the upper layer of the guest's workspace overlay, read
// from an OCI layer tar (files, directories, symlinks, hard links; deletions
// as ".wh.<name>" whiteouts, opaque directories as ".wh..wh..opq"). File
// content is staged into a directory of the session (one file per entry,
// named by number) and hashed while it is written; the stream is untrusted
// and checked by TarGuard.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "workspace/ignore.h"
#include "workspace/manifest.h"
#include "workspace/tar_safety.h"

struct archive;

namespace airlock::workspace {

/// One path of the agent's upper layer: its final state.
struct Change {
  enum class Kind { File, Dir, Symlink, Whiteout };
  Kind kind = Kind::File;
  uint32_t mode = 0;     ///< permission bits as the agent set them (incl. setuid etc.)
  uint64_t size = 0;     ///< content bytes (files)
  std::string sha256;    ///< content digest (files)
  std::string target;    ///< link target (symlinks)
  std::string staged;    ///< file name of the content in the staging directory (files)
  bool opaque = false;   ///< directory hides all baseline contents not listed again
  bool implied = false;  ///< directory known only from an opaque marker (mode unknown)
};

/// An entry of the upper layer that is not reviewed and never flushed: a FIFO,
/// socket or device node, or a file over TarLimits::maxEntryBytes (its content
/// is not read). Reported in the review.
struct SkippedEntry {
  std::string path;
  std::string reason;  ///< e.g. "FIFO; only files, directories and symlinks are reviewed"
  uint64_t size = 0;   ///< the size the header claims (files), bytes
};

/// True when the change set tar at `tarPath` holds no entry but the root
/// ("./"): the agent changed nothing. Reads headers only (a guest's tar:
/// anything unreadable is "not empty", for the review to judge).
bool changeSetIsEmpty(const std::string& tarPath);

/// Paths of the upper layer, ordered by path, plus the staging directory.
class ChangeSet {
 public:
  using Map = std::map<std::string, Change, std::less<>>;

  /// Reads an OCI layer tar from `fd` (uncompressed), staging file content
  /// into `stagingDir` (created; its parent must exist). Fails, naming the
  /// entry, on anything TarGuard refuses or on a malformed archive. Special
  /// files and files whose header claims more than limits.maxEntryBytes are
  /// left out and listed in skipped().
  static Result<ChangeSet> fromTar(int fd, const std::string& stagingDir, const TarLimits& limits = {});

  /// Same for a tar held in memory (tests, fuzzing).
  static Result<ChangeSet> fromTarBuffer(std::string_view data, const std::string& stagingDir,
                                         const TarLimits& limits = {});

  /// The change set that turns directory `baseline` into directory `after`
  /// (both scanned with `rules`): changed/added entries, and a whiteout for
  /// each top-most removed entry. Content of `after` is staged into `stagingDir`.
  static Result<ChangeSet> fromDirectories(const std::string& baseline, const std::string& after,
                                           const std::string& stagingDir, const IgnoreRules& rules);

  const Map& changes() const { return changes_; }
  /// Entries left out, in stream order.
  const std::vector<SkippedEntry>& skipped() const { return skipped_; }
  const std::string& stagingDir() const { return stagingDir_; }

  /// Absolute path of a file change's staged content.
  std::string stagedPath(const Change& c) const { return stagingDir_ + "/" + c.staged; }

  /// Adds a change (used by the parsers and by tests building change sets by hand).
  void put(std::string path, Change c) { changes_[std::move(path)] = std::move(c); }
  /// Adds a skipped entry (parsers, tests).
  void skip(SkippedEntry e) { skipped_.push_back(std::move(e)); }

 private:
  /// The parser behind fromTar and fromTarBuffer; `open` opens the stream.
  static Result<ChangeSet> fromArchive(const std::function<int(archive*)>& open, const std::string& stagingDir,
                                       const TarLimits& limits);
  Map changes_;
  std::vector<SkippedEntry> skipped_;
  std::string stagingDir_;
};

}  // namespace airlock::workspace
