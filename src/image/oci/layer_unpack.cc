#include "image/oci/layer_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <set>
#include <vector>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/sha256.h"
#include "workspace/relpath.h"
#include "workspace/tar_reader.h"

namespace airlock::image::oci {
namespace {

using workspace::baseName;
using workspace::displayPath;
using workspace::EntryType;
using workspace::kOpaque;
using workspace::kWhiteout;
using workspace::parentPath;
using workspace::TarEntryKind;

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};

// Opens directory `rel` of the tree, resolving symlinks as if the tree were "/".
int openDirInRoot(int rootFd, const std::string& rel, Fd& out) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd = ::syscall(SYS_openat2, rootFd, rel.empty() ? "." : rel.c_str(), &how, sizeof how);
  if (fd < 0) return errno;
  out.reset(static_cast<int>(fd));
  return 0;
}

// Removes `name` in `dirFd` and, for a directory, everything below it.
int removeAt(int dirFd, const char* name) {
  struct stat st {};
  if (::fstatat(dirFd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : errno;
  if (!S_ISDIR(st.st_mode)) return ::unlinkat(dirFd, name, 0) == 0 ? 0 : errno;
  int fd = ::openat(dirFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    int err = errno;
    ::close(fd);
    return err;
  }
  int err = 0;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    if ((err = removeAt(fd, e->d_name)) != 0) break;
  }
  ::closedir(d);
  if (err) return err;
  return ::unlinkat(dirFd, name, AT_REMOVEDIR) == 0 ? 0 : errno;
}

class LayerApplier {
 public:
  LayerApplier(int rootFd, std::string layerName, const workspace::TarLimits& limits)
      : rootFd_(rootFd), layer_(std::move(layerName)), limits_(limits), asRoot_(::geteuid() == 0) {}

  // Two libarchive readers in a row: `raw` undoes the compression and hands
  // the uncompressed stream, hashed on the way (the diff_id), to `tar`.
  Result<LayerStats> run(const std::string& blobPath) {
    std::unique_ptr<archive, ArchiveFree> raw(archive_read_new());
    archive_read_support_format_raw(raw.get());
    archive_read_support_filter_gzip(raw.get());
    archive_read_support_filter_zstd(raw.get());
    archive_read_support_filter_none(raw.get());
    raw_ = raw.get();
    archive_entry* rawEntry = nullptr;
    if (archive_read_open_filename(raw_, blobPath.c_str(), 1 << 17) != ARCHIVE_OK ||
        archive_read_next_header(raw_, &rawEntry) != ARCHIVE_OK)
      return failWith(exit_code::kImage, "{}: cannot open: {}", layer_, archiveError(raw_));
    std::unique_ptr<archive, ArchiveFree> tar(archive_read_new());
    archive_read_support_format_tar(tar.get());
    archive_read_support_format_gnutar(tar.get());
    if (archive_read_open(tar.get(), this, nullptr, &LayerApplier::readUncompressed, nullptr) != ARCHIVE_OK)
      return failWith(exit_code::kImage, "{}: cannot open: {}", layer_, archiveError(tar.get()));
    workspace::TarReader reader(tar.get(), limits_, "the layer", workspace::SpecialFiles::Skip);
    reader_ = &reader;
    for (;;) {
      auto entry = reader.next();
      if (!entry) return std::unexpected(Error{layer_ + " was refused: " + entry.error().message, exit_code::kImage});
      if (!*entry) break;
      ++stats_.entries;
      if (auto res = handle(**entry); !res)
        return std::unexpected(Error{layer_ + " was refused: " + res.error().message, exit_code::kImage});
    }
    // The uncompressed stream goes on after the tar end marker (padding).
    for (;;) {
      la_ssize_t n = archive_read_data(raw_, buf_.data(), buf_.size());
      if (n < 0) return failWith(exit_code::kImage, "{}: cannot decompress: {}", layer_, archiveError(raw_));
      if (n == 0) break;
      diff_.update(std::string_view(buf_.data(), static_cast<size_t>(n)));
    }
    stats_.diffId = "sha256:" + diff_.hex();
    return stats_;
  }

 private:
  static std::string archiveError(archive* a) {
    const char* s = archive_error_string(a);
    return s ? s : "unknown error";
  }

  static la_ssize_t readUncompressed(archive* tar, void* self, const void** out) {
    auto* me = static_cast<LayerApplier*>(self);
    la_ssize_t n = archive_read_data(me->raw_, me->buf_.data(), me->buf_.size());
    if (n < 0) {
      archive_set_error(tar, EIO, "cannot decompress: %s", archiveError(me->raw_).c_str());
      return -1;
    }
    me->diff_.update(std::string_view(me->buf_.data(), static_cast<size_t>(n)));
    *out = me->buf_.data();
    return n;
  }

  Result<> handle(const workspace::TarEntry& e) {
    if (e.skipped) {
      ++stats_.skippedSpecial;
      return {};
    }
    archive_entry* entry = e.header;
    const TarEntryKind kind = e.kind;
    const std::string& path = e.path;
    if (path.empty()) return {};  // the root directory entry
    const std::string base(baseName(path));
    const std::string parent(parentPath(path));
    if (e.whiteout) return whiteout(path, parent, base);
    auto dir = ensureDir(parent, path);
    if (!dir) return std::unexpected(dir.error());
    const int pfd = dir->get();
    const mode_t mode = static_cast<mode_t>(archive_entry_perm(entry)) & 07777;
    struct stat st {};
    const bool exists = ::fstatat(pfd, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && !(kind == TarEntryKind::Dir && S_ISDIR(st.st_mode)))
      if (int err = removeAt(pfd, base.c_str())) return fail("cannot replace '{}': {}", displayPath(path), errnoText(err));
    created_.insert(path);
    switch (kind) {
      case TarEntryKind::Dir: {
        if (!(exists && S_ISDIR(st.st_mode)) && ::mkdirat(pfd, base.c_str(), 0700) != 0)
          return fail("cannot create directory '{}': {}", displayPath(path), errnoText(errno));
        Fd d(::openat(pfd, base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!d) return fail("cannot open directory '{}': {}", displayPath(path), errnoText(errno));
        // Without root, keep the owner's rwx so later layers can still write here.
        if (::fchmod(d.get(), asRoot_ ? mode : (mode | 0700)) != 0 || !chown(d.get(), entry))
          return fail("cannot set the mode of '{}': {}", displayPath(path), errnoText(errno));
        reader_->note(path, EntryType::Dir);
        return {};
      }
      case TarEntryKind::Symlink: {
        const char* target = archive_entry_symlink(entry);
        if (!target || !*target) return fail("symlink '{}' has an empty target", displayPath(path));
        if (::symlinkat(target, pfd, base.c_str()) != 0)
          return fail("cannot create symlink '{}': {}", displayPath(path), errnoText(errno));
        if (asRoot_)
          ::fchownat(pfd, base.c_str(), static_cast<uid_t>(archive_entry_uid(entry)),
                     static_cast<gid_t>(archive_entry_gid(entry)), AT_SYMLINK_NOFOLLOW);
        timespec times[2] = {{archive_entry_mtime(entry), 0}, {archive_entry_mtime(entry), 0}};
        ::utimensat(pfd, base.c_str(), times, AT_SYMLINK_NOFOLLOW);
        reader_->note(path, EntryType::Symlink);
        return {};
      }
      case TarEntryKind::HardLink: {
        const std::string& target = e.linkTarget;
        Fd tdir;
        if (int err = openDirInRoot(rootFd_, std::string(parentPath(target)), tdir))
          return fail("cannot open the directory of hard link target '{}': {}", displayPath(target), errnoText(err));
        if (::linkat(tdir.get(), std::string(baseName(target)).c_str(), pfd, base.c_str(), 0) != 0)
          return fail("cannot create hard link '{}' to '{}': {}", displayPath(path), displayPath(target), errnoText(errno));
        reader_->note(path, EntryType::File);
        return {};
      }
      default: return writeFile(pfd, path, base, mode, entry);
    }
  }

  bool chown(int fd, archive_entry* entry) {
    if (!asRoot_) return true;
    return ::fchown(fd, static_cast<uid_t>(archive_entry_uid(entry)), static_cast<gid_t>(archive_entry_gid(entry))) == 0;
  }

  Result<> writeFile(int pfd, const std::string& path, const std::string& base, mode_t mode, archive_entry* entry) {
    Fd out(::openat(pfd, base.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) return fail("cannot create '{}': {}", displayPath(path), errnoText(errno));
    auto size = reader_->readContent(path, [&](std::string_view chunk) -> Result<> {
      if (!writeAll(out.get(), chunk)) return fail("cannot write '{}': {}", displayPath(path), errnoText(errno));
      return {};
    });
    if (!size) return std::unexpected(size.error());
    if (!chown(out.get(), entry) || ::fchmod(out.get(), mode) != 0)
      return fail("cannot set the owner or mode of '{}': {}", displayPath(path), errnoText(errno));
    timespec times[2] = {{archive_entry_mtime(entry), 0}, {archive_entry_mtime(entry), 0}};
    ::futimens(out.get(), times);
    reader_->note(path, EntryType::File);
    return {};
  }

  // Opens directory `rel`, creating missing directories (0755) on the way.
  Result<Fd> ensureDir(const std::string& rel, const std::string& entry) {
    Fd fd;
    int err = openDirInRoot(rootFd_, rel, fd);
    if (err == 0) return fd;
    if (err != ENOENT || rel.empty())
      return fail("cannot open directory '{}' for entry '{}': {}", displayPath(rel), displayPath(entry), errnoText(err));
    auto parent = ensureDir(std::string(parentPath(rel)), entry);
    if (!parent) return parent;
    if (::mkdirat(parent->get(), std::string(baseName(rel)).c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot create directory '{}' for entry '{}': {}", displayPath(rel), displayPath(entry),
                  errnoText(errno));
    if ((err = openDirInRoot(rootFd_, rel, fd)) != 0)
      return fail("cannot open directory '{}' for entry '{}': {}", displayPath(rel), displayPath(entry), errnoText(err));
    return fd;
  }

  Result<> whiteout(const std::string& path, const std::string& parent, const std::string& base) {
    Fd dir;
    int err = openDirInRoot(rootFd_, parent, dir);
    if (err == ENOENT) return {};  // nothing below to hide
    if (err) return fail("cannot open directory '{}' for whiteout '{}': {}", displayPath(parent), displayPath(path),
                         errnoText(err));
    if (base == kOpaque) return opaque(dir.get(), parent);
    std::string name = base.substr(kWhiteout.size());
    if (name.empty() || name == "." || name == ".." || name.starts_with(kWhiteout))
      return fail("whiteout '{}' names no valid entry", displayPath(path));
    std::string victim = parent.empty() ? name : parent + "/" + name;
    if (created_.count(victim)) return {};  // whiteouts hide lower layers only
    if (int e = removeAt(dir.get(), name.c_str())) return fail("cannot apply whiteout '{}': {}", displayPath(path), errnoText(e));
    return {};
  }

  // Removes what lower layers put in `parent`, keeping this layer's entries.
  Result<> opaque(int dirFd, const std::string& parent) {
    Fd listFd(::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!listFd) return fail("cannot list '{}' for its opaque marker: {}", displayPath(parent), errnoText(errno));
    DIR* d = ::fdopendir(listFd.release());
    if (!d) return fail("cannot list '{}': {}", displayPath(parent), errnoText(errno));
    std::vector<std::string> victims;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      if (!created_.count(parent.empty() ? n : parent + "/" + n)) victims.push_back(n);
    }
    ::closedir(d);
    for (const auto& v : victims)
      if (int err = removeAt(dirFd, v.c_str()))
        return fail("cannot empty opaque directory '{}': {}", displayPath(parent), errnoText(err));
    return {};
  }

  int rootFd_;
  std::string layer_;
  workspace::TarLimits limits_;
  bool asRoot_;
  archive* raw_ = nullptr;
  workspace::TarReader* reader_ = nullptr;
  std::vector<char> buf_ = std::vector<char>(1 << 17);
  Sha256 diff_;
  LayerStats stats_;
  std::set<std::string> created_;
};

}  // namespace

Result<LayerStats> applyLayer(int rootFd, const std::string& blobPath, const std::string& layerName,
                              const workspace::TarLimits& limits) {
  return LayerApplier(rootFd, layerName, limits).run(blobPath);
}

}  // namespace airlock::image::oci
