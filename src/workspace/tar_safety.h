#pragma once
// Rules every untrusted tar stream must pass, shared by the change-set parser
// and (later) OCI image layer unpacking: no absolute names, no '..', no NUL,
// nothing below a symlink or a non-directory of the same stream, no device
// nodes/FIFOs/sockets, hard links only to regular files earlier in the same
// stream, and size limits per entry and in total.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/error.h"
#include "workspace/manifest.h"

struct archive_entry;

namespace airlock::workspace {

/// OCI layer markers (OCI image spec, layer.md "Whiteouts"): a `.wh.NAME`
/// entry deletes NAME; a `.wh..wh..opq` entry makes its directory opaque.
inline constexpr std::string_view kWhiteout = ".wh.";
inline constexpr std::string_view kOpaque = ".wh..wh..opq";

/// Size limits for one stream.
struct TarLimits {
  uint64_t maxEntryBytes = uint64_t{4} << 30;   ///< content of one entry, bytes
  uint64_t maxTotalBytes = uint64_t{16} << 30;  ///< content of the whole stream, bytes
  uint64_t maxEntries = 1'000'000;              ///< number of entries
};

/// What a tar header claims an entry is.
enum class TarEntryKind { File, Dir, Symlink, HardLink, Fifo, Socket, CharDevice, BlockDevice, Unknown };

/// What a libarchive entry header claims the entry is (hard link first).
TarEntryKind tarEntryKind(archive_entry* entry);

/// Tracks one stream's entries to enforce the rules that span entries.
/// Each error is one sentence naming the offending entry.
class TarGuard {
 public:
  /// `stream` names the stream in errors ("the change set", "the layer").
  explicit TarGuard(TarLimits limits, std::string stream = "the change set")
      : limits_(limits), stream_(std::move(stream)) {}

  /// Validates the name of the next entry and its kind: returns the
  /// normalized relative path ("" for the root entry "./").
  Result<std::string> admit(std::string_view rawName, TarEntryKind kind);

  /// Resolves a hard link's target name to an earlier regular file of this
  /// stream; fails for anything else (outside paths, later entries, dirs).
  Result<std::string> hardLinkTarget(std::string_view rawTarget, std::string_view entry) const;

  /// Records `path` (already admitted) as an entry of type `type`.
  void note(const std::string& path, EntryType type) { seen_[path] = type; }

  /// Adds `bytes` of content for `entry`; `entryBytes` is that entry's running
  /// total. Fails over the per-entry or the total limit.
  Result<> account(std::string_view entry, uint64_t entryBytes, uint64_t bytes);

  const TarLimits& limits() const { return limits_; }

 private:
  TarLimits limits_;
  std::string stream_;
  std::map<std::string, EntryType, std::less<>> seen_;
  uint64_t entries_ = 0;
  uint64_t total_ = 0;
};

}  // namespace airlock::workspace
