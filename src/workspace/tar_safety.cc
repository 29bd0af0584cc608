#include "workspace/tar_safety.h"

#include <archive_entry.h>

#include "workspace/relpath.h"

namespace airlock::workspace {

TarEntryKind tarEntryKind(archive_entry* e) {
  if (archive_entry_hardlink(e)) return TarEntryKind::HardLink;
  switch (archive_entry_filetype(e)) {
    case AE_IFREG: return TarEntryKind::File;
    case AE_IFDIR: return TarEntryKind::Dir;
    case AE_IFLNK: return TarEntryKind::Symlink;
    case AE_IFIFO: return TarEntryKind::Fifo;
    case AE_IFSOCK: return TarEntryKind::Socket;
    case AE_IFCHR: return TarEntryKind::CharDevice;
    case AE_IFBLK: return TarEntryKind::BlockDevice;
    default: return TarEntryKind::Unknown;
  }
}

Result<std::string> TarGuard::admit(std::string_view rawName, TarEntryKind kind) {
  if (++entries_ > limits_.maxEntries)
    return fail("{} has more than {} entries; it was refused as too large", stream_, limits_.maxEntries);
  auto path = normalizeRelative(rawName);
  if (!path) return std::unexpected(path.error());
  switch (kind) {
    case TarEntryKind::File:
    case TarEntryKind::Dir:
    case TarEntryKind::Symlink:
    case TarEntryKind::HardLink: break;
    case TarEntryKind::Fifo: return fail("entry '{}' is a FIFO; FIFOs are not allowed in {}", displayPath(*path), stream_);
    case TarEntryKind::Socket: return fail("entry '{}' is a socket; sockets are not allowed in {}", displayPath(*path), stream_);
    case TarEntryKind::CharDevice:
    case TarEntryKind::BlockDevice:
      return fail("entry '{}' is a device node; device nodes are not allowed in {}", displayPath(*path), stream_);
    case TarEntryKind::Unknown: return fail("entry '{}' has an unsupported type", displayPath(*path));
  }
  // No ancestor may be a symlink or a file of this same stream.
  std::string_view p = *path;
  size_t pos = 0;
  while (true) {
    size_t slash = p.find('/', pos);
    if (slash == std::string_view::npos) break;
    auto it = seen_.find(p.substr(0, slash));
    if (it != seen_.end() && it->second != EntryType::Dir)
      return fail("entry '{}' lies below '{}', which is a {} in {}; paths through symlinks are refused",
                  displayPath(p), displayPath(it->first), entryTypeName(it->second), stream_);
    pos = slash + 1;
  }
  return path;
}

Result<std::string> TarGuard::hardLinkTarget(std::string_view rawTarget, std::string_view entry) const {
  auto target = normalizeRelative(rawTarget);
  if (!target || target->empty())
    return fail("hard link '{}' points to '{}', outside {}; hard links may only point to earlier entries",
                displayPath(entry), displayPath(rawTarget), stream_);
  auto it = seen_.find(*target);
  if (it == seen_.end() || it->second != EntryType::File)
    return fail("hard link '{}' points to '{}', which is not an earlier regular file of {}",
                displayPath(entry), displayPath(*target), stream_);
  return target;
}

Result<> TarGuard::account(std::string_view entry, uint64_t entryBytes, uint64_t bytes) {
  total_ += bytes;
  if (entryBytes > limits_.maxEntryBytes)
    return fail("entry '{}' is larger than the limit of {} bytes; it was refused", displayPath(entry),
                limits_.maxEntryBytes);
  if (total_ > limits_.maxTotalBytes)
    return fail("{} exceeds the total limit of {} bytes at entry '{}'; it was refused", stream_,
                limits_.maxTotalBytes, displayPath(entry));
  return {};
}

}  // namespace airlock::workspace
