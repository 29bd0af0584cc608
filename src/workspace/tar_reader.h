#pragma once
// The read step every untrusted tar stream shares (change sets and OCI image
// layers): next header, name decoding, entry kind, TarGuard admission,
// whiteout detection, hard-link resolution and size-accounted content reads.
// What to do with an admitted entry stays with the caller.

#include <archive.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "workspace/tar_safety.h"

struct archive_entry;

namespace airlock::workspace {

/// One admitted entry of the stream.
struct TarEntry {
  archive_entry* header = nullptr;  ///< valid until the next call to next()
  TarEntryKind kind = TarEntryKind::Unknown;
  std::string path;        ///< normalized relative path; "" for the root entry "./"
  bool whiteout = false;   ///< the base name starts with ".wh." (kWhiteout)
  bool skipped = false;    ///< a special file left out: path is empty (Skip) or its checked name (Report)
  std::string linkTarget;  ///< hard links (not whiteouts): the earlier regular file it names
};

/// What to do with device nodes, FIFOs and sockets: refuse the stream, skip
/// them unnamed, or check their name like any entry and hand them out marked
/// `skipped` so the caller can report them.
enum class SpecialFiles { Refuse, Skip, Report };

/// Reads one libarchive stream (opened by the caller) entry by entry.
class TarReader {
 public:
  /// `stream` names the stream in errors about its structure ("the change set").
  TarReader(archive* a, const TarLimits& limits, std::string stream, SpecialFiles special = SpecialFiles::Refuse)
      : a_(a), guard_(limits, stream), stream_(std::move(stream)), special_(special) {}

  /// The next admitted entry; nullopt at the end of the stream. Errors name
  /// the entry (or, for a broken stream, how many entries were read).
  Result<std::optional<TarEntry>> next();

  /// Reads the current entry's content in chunks into `sink`, enforcing the
  /// size limits; returns the number of bytes read.
  Result<uint64_t> readContent(const std::string& path, const std::function<Result<>(std::string_view)>& sink);

  /// Counts `bytes` of a hard link `path` against the limits as if its
  /// content were read again (links cannot multiply what the limits allow).
  Result<> accountLink(const std::string& path, uint64_t bytes) { return guard_.account(path, bytes, bytes); }

  /// Records `path` as an entry of type `type` (see TarGuard::note).
  void note(const std::string& path, EntryType type) { guard_.note(path, type); }

  /// libarchive's last error text.
  std::string errorText() const;
  /// Headers read so far (skipped special files included).
  uint64_t count() const { return count_; }

 private:
  archive* a_;
  TarGuard guard_;
  std::string stream_;
  SpecialFiles special_;
  uint64_t count_ = 0;
};

}  // namespace airlock::workspace
