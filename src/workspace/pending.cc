#include "workspace/pending.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "common/fd.h"
#include "common/paths.h"
#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

struct WriterCloser {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct EntryCloser {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

/// The data regions (offset, length) of the staged file `fd` of `size`
/// bytes, found with SEEK_DATA/SEEK_HOLE; one region when the file system
/// cannot tell.
std::vector<std::pair<off_t, off_t>> dataRegions(int fd, off_t size) {
  std::vector<std::pair<off_t, off_t>> regions;
  off_t pos = 0;
  while (pos < size) {
    off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0) return {{0, size}};
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return {{0, size}};
    hole = std::min(hole, size);
    if (hole > data) regions.emplace_back(data, hole - data);
    pos = hole;
  }
  return regions;
}

/// Writes one entry. A file whose `contentFile` has holes becomes a sparse
/// entry (pax GNU.sparse 1.0), so holes take no room in the tar; a
/// non-empty `hardLink` makes the entry a hard link to that earlier entry.
Result<> writeEntry(archive* a, const std::string& name, unsigned type, unsigned mode, const std::string& link,
                    const std::string& contentFile, uint64_t size, const std::string& hardLink = "") {
  std::unique_ptr<archive_entry, EntryCloser> e(archive_entry_new());
  archive_entry_copy_pathname(e.get(), name.c_str());
  archive_entry_set_filetype(e.get(), type);
  archive_entry_set_perm(e.get(), mode);
  bool content = type == AE_IFREG && hardLink.empty() && size > 0;
  archive_entry_set_size(e.get(), content ? static_cast<la_int64_t>(size) : 0);
  if (type == AE_IFLNK) archive_entry_copy_symlink(e.get(), link.c_str());
  if (!hardLink.empty()) archive_entry_copy_hardlink(e.get(), hardLink.c_str());
  Fd in;
  std::vector<std::pair<off_t, off_t>> regions;
  if (content) {
    in.reset(::open(contentFile.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!in) return fail("cannot read staged content {}: {}", contentFile, errnoText(errno));
    regions = dataRegions(in.get(), static_cast<off_t>(size));
    bool whole = regions.size() == 1 && regions[0] == std::pair<off_t, off_t>{0, static_cast<off_t>(size)};
    if (!whole) {
      for (auto [off, len] : regions) archive_entry_sparse_add_entry(e.get(), off, len);
      if (regions.empty() || regions.back().first + regions.back().second < static_cast<off_t>(size))
        archive_entry_sparse_add_entry(e.get(), static_cast<la_int64_t>(size), 0);  // trailing hole
    }
  }
  if (archive_write_header(a, e.get()) != ARCHIVE_OK)
    return fail("cannot write '{}' to the pending change set: {}", displayPath(name), archive_error_string(a));
  if (!content) return {};
  // libarchive takes the logical stream and skips the holes of a sparse
  // entry: holes are fed from a zero buffer, never read from disk.
  static thread_local char buf[1 << 16];
  static const char zeros[1 << 16] = {};
  auto put = [&](const char* data, size_t n) -> Result<> {
    if (archive_write_data(a, data, n) < 0)
      return fail("cannot write '{}' to the pending change set: {}", displayPath(name), archive_error_string(a));
    return {};
  };
  off_t pos = 0;
  regions.emplace_back(static_cast<off_t>(size), 0);
  for (auto [off, len] : regions) {
    for (; pos < off;) {
      size_t n = static_cast<size_t>(std::min<off_t>(off - pos, sizeof zeros));
      if (auto r = put(zeros, n); !r) return r;
      pos += static_cast<off_t>(n);
    }
    for (off_t end = off + len; pos < end;) {
      ssize_t n = ::pread(in.get(), buf, static_cast<size_t>(std::min<off_t>(end - pos, sizeof buf)), pos);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail("cannot read staged content {}: {}", contentFile, n < 0 ? errnoText(errno) : "short file");
      if (auto r = put(buf, static_cast<size_t>(n)); !r) return r;
      pos += n;
    }
  }
  return {};
}

std::string join(std::string_view parent, std::string_view name) {
  return parent.empty() ? std::string(name) : std::string(parent) + "/" + std::string(name);
}

}  // namespace

Result<std::string> keepPending(const std::vector<DiffItem>& items, const std::vector<Decision>& decisions,
                                const std::vector<bool>& keep, const ThreeWayDiff& diff,
                                const std::string& sessionDir) {
  std::string dir = sessionDir + "/pending";
  (void)removeTree(dir);
  // Skipped items have no content to keep (the review reported them).
  bool any = false;
  for (size_t i = 0; i < items.size(); ++i) any = any || (keep[i] && items[i].kind != ChangeKind::Skipped);
  if (!any) return std::string();
  if (auto r = makeDirs(dir, 0700); !r) return std::unexpected(r.error());
  std::unique_ptr<archive, WriterCloser> a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  archive_write_set_format_option(a.get(), "pax", "hdrcharset", "BINARY");
  std::string tarPath = dir + "/changes.tar";
  if (archive_write_open_filename(a.get(), tarPath.c_str()) != ARCHIVE_OK)
    return fail("cannot create {}: {}", tarPath, archive_error_string(a.get()));
  std::string patch, list;
  // The last kept path that removes whatever lies below it: a deletion (its
  // whiteout covers everything below) or a file or symlink that replaces a
  // directory (the change set parser refuses entries below a file; the
  // deletions below it follow from the type change).
  std::string coveringPath;
  // Hard links share one staged file: the first kept path carries the
  // content, the others are hard link entries to it.
  std::map<std::string, std::string> firstWithContent;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!keep[i] || items[i].kind == ChangeKind::Skipped) continue;
    const DiffItem& it = items[i];
    bool below = !coveringPath.empty() && it.path.starts_with(coveringPath + "/");
    list += fmt::format("{} {}\n", decisionName(decisions[i]), percentEncode(it.path));
    auto p = diff.patch(it, false);
    patch += p ? *p : p.error().message + "\n";
    patch += "\n";
    const Side& ag = it.agent;
    Result<> r;
    if (ag.exists && ag.type != EntryType::Dir) coveringPath = it.path;
    if (!ag.exists && below) {
      // items are sorted by path: the parent's whiteout or replacement, written earlier, deletes this too
    } else if (!ag.exists) {
      coveringPath = it.path;
      r = writeEntry(a.get(), join(parentPath(it.path), ".wh." + std::string(baseName(it.path))), AE_IFREG, 0644, "",
                     "", 0);
    } else if (ag.type == EntryType::Dir) {
      r = writeEntry(a.get(), it.path, AE_IFDIR, ag.mode & 07777, "", "", 0);
      if (r && it.kind == ChangeKind::TypeChanged)
        r = writeEntry(a.get(), it.path + "/.wh..wh..opq", AE_IFREG, 0644, "", "", 0);
    } else if (ag.type == EntryType::Symlink) {
      r = writeEntry(a.get(), it.path, AE_IFLNK, 0777, ag.target, "", 0);
    } else {
      auto [first, isNew] = firstWithContent.try_emplace(it.staged, it.path);
      r = writeEntry(a.get(), it.path, AE_IFREG, ag.mode & 07777, "", it.staged, ag.size,
                     isNew || it.staged.empty() ? "" : first->second);
    }
    if (!r) return std::unexpected(r.error());
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    return fail("cannot finish {}: {}", tarPath, archive_error_string(a.get()));
  if (auto r = writeFileAtomic(dir + "/changes.patch", patch, 0600); !r) return std::unexpected(r.error());
  if (auto r = writeFileAtomic(dir + "/decisions", list, 0600); !r) return std::unexpected(r.error());
  return dir;
}

}  // namespace airlock::workspace
