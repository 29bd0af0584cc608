#include "workspace/pending.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

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

Result<> writeEntry(archive* a, const std::string& name, unsigned type, unsigned mode, const std::string& link,
                    const std::string& contentFile, uint64_t size) {
  std::unique_ptr<archive_entry, EntryCloser> e(archive_entry_new());
  archive_entry_copy_pathname(e.get(), name.c_str());
  archive_entry_set_filetype(e.get(), type);
  archive_entry_set_perm(e.get(), mode);
  archive_entry_set_size(e.get(), type == AE_IFREG ? static_cast<la_int64_t>(size) : 0);
  if (type == AE_IFLNK) archive_entry_copy_symlink(e.get(), link.c_str());
  if (archive_write_header(a, e.get()) != ARCHIVE_OK)
    return fail("cannot write '{}' to the pending change set: {}", displayPath(name), archive_error_string(a));
  if (type == AE_IFREG && size > 0) {
    Fd in(::open(contentFile.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!in) return fail("cannot read staged content {}: {}", contentFile, errnoText(errno));
    static thread_local char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(in.get(), buf, sizeof buf);
      if (n < 0) return fail("cannot read staged content {}: {}", contentFile, errnoText(errno));
      if (n == 0) break;
      if (archive_write_data(a, buf, static_cast<size_t>(n)) < 0)
        return fail("cannot write '{}' to the pending change set: {}", displayPath(name), archive_error_string(a));
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
  std::string deletedDir;  // the last kept deleted path: its whiteout covers everything below it
  for (size_t i = 0; i < items.size(); ++i) {
    if (!keep[i] || items[i].kind == ChangeKind::Skipped) continue;
    const DiffItem& it = items[i];
    bool below = !deletedDir.empty() && it.path.starts_with(deletedDir + "/");
    list += fmt::format("{} {}\n", decisionName(decisions[i]), percentEncode(it.path));
    auto p = diff.patch(it, false);
    patch += p ? *p : p.error().message + "\n";
    patch += "\n";
    const Side& ag = it.agent;
    Result<> r;
    if (!ag.exists && below) {
      // items are sorted by path: the parent's whiteout, written earlier, deletes this too
    } else if (!ag.exists) {
      deletedDir = it.path;
      r = writeEntry(a.get(), join(parentPath(it.path), ".wh." + std::string(baseName(it.path))), AE_IFREG, 0644, "",
                     "", 0);
    } else if (ag.type == EntryType::Dir) {
      r = writeEntry(a.get(), it.path, AE_IFDIR, ag.mode & 07777, "", "", 0);
      if (r && it.kind == ChangeKind::TypeChanged)
        r = writeEntry(a.get(), it.path + "/.wh..wh..opq", AE_IFREG, 0644, "", "", 0);
    } else if (ag.type == EntryType::Symlink) {
      r = writeEntry(a.get(), it.path, AE_IFLNK, 0777, ag.target, "", 0);
    } else {
      r = writeEntry(a.get(), it.path, AE_IFREG, ag.mode & 07777, "", it.staged, ag.size);
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
