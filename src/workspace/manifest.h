#pragma once
// The baseline manifest: what the workspace looked like when the snapshot was
// taken. One record per entry (regular file, directory, symlink); the root
// itself is not recorded. Saved as a line-based text file in the session
// directory ("airlock-manifest 1" header, then one record per line).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::workspace {

/// The kinds of entries a workspace, a manifest or a change set may hold.
enum class EntryType : char { File = 'f', Dir = 'd', Symlink = 'l' };

/// Name of an entry type for messages ("file", "directory", "symlink").
const char* entryTypeName(EntryType t);

/// One baseline record.
struct ManifestEntry {
  EntryType type = EntryType::File;
  uint32_t mode = 0;     ///< permission bits incl. setuid/setgid/sticky, as found
  uint64_t size = 0;     ///< bytes (files), 0 otherwise
  int64_t mtimeNs = 0;   ///< modification time, ns since the epoch
  std::string sha256;    ///< hex digest of the content (files only)
  std::string target;    ///< link target (symlinks only)
};

/// All baseline records, ordered by path (byte order, so a directory's
/// descendants follow it contiguously once "dir/" is used as the bound).
class Manifest {
 public:
  using Map = std::map<std::string, ManifestEntry, std::less<>>;

  /// Adds or replaces the record for `path` (normalized relative path).
  void add(std::string path, ManifestEntry entry) { entries_[std::move(path)] = std::move(entry); }

  /// The record for `path`, or nullptr.
  const ManifestEntry* find(std::string_view path) const;

  /// Paths strictly below directory `dir`, in order. O(log n + k).
  std::vector<std::string> below(std::string_view dir) const;

  const Map& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

  /// The text form (see file comment).
  std::string serialize() const;

  /// Parses the text form; `origin` names the file in errors.
  static Result<Manifest> parse(std::string_view text, std::string_view origin);

  /// Writes the text form atomically to `file`.
  Result<> save(const std::string& file) const;

  /// Reads a manifest written by save().
  static Result<Manifest> load(const std::string& file);

 private:
  Map entries_;
};

}  // namespace airlock::workspace
