#include "workspace/changeset.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <set>

#include "common/fd.h"
#include "common/sha256.h"
#include "workspace/relpath.h"
#include "workspace/safe_fs.h"
#include "workspace/snapshot.h"
#include "workspace/tar_reader.h"

namespace airlock::workspace {
namespace {

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveCloser>;

class ChangeSetReader {
 public:
  ChangeSetReader(archive* a, int stagingFd, const TarLimits& limits)
      : reader_(a, limits, "the change set", SpecialFiles::Report), limits_(limits), stagingFd_(stagingFd) {}

  Result<ChangeSet::Map> run() {
    for (;;) {
      auto entry = reader_.next();
      if (!entry) return std::unexpected(entry.error());
      if (!*entry) break;
      if (auto res = handle(**entry); !res) return std::unexpected(res.error());
    }
    return std::move(map_);
  }

  std::vector<SkippedEntry> takeSkipped() { return std::move(skipped_); }

 private:
  Result<> handle(const TarEntry& e) {
    const std::string& path = e.path;
    if (path.empty()) return {};  // the layer's root directory entry
    if (e.skipped)
      return skip(path, fmt::format("{}; only files, directories and symlinks are reviewed", specialName(e.kind)));
    if (e.whiteout) return whiteout(path, baseName(path), e.kind);
    Change c;
    c.mode = static_cast<uint32_t>(archive_entry_perm(e.header)) & 07777;
    switch (e.kind) {
      case TarEntryKind::Dir: c.kind = Change::Kind::Dir; break;
      case TarEntryKind::Symlink: {
        c.kind = Change::Kind::Symlink;
        const char* t = archive_entry_symlink(e.header);
        if (!t || !*t || std::string_view(t).size() > 4095)
          return fail("symlink '{}' has an empty or overlong target", displayPath(path));
        c.target = t;
        break;
      }
      case TarEntryKind::HardLink: {
        if (skippedPaths_.count(e.linkTarget))
          return skip(path, fmt::format("hard link to '{}', which was skipped", displayPath(e.linkTarget)));
        auto target = map_.find(e.linkTarget);
        if (target == map_.end() || target->second.kind != Change::Kind::File)
          return fail("hard link '{}' points at '{}', which is not a file of the change set", displayPath(path),
                      displayPath(e.linkTarget));
        c = target->second;  // shares the staged content: one copy on disk
        if (auto r = reader_.accountLink(path, c.size); !r) return std::unexpected(r.error());
        break;
      }
      default: {
        c.kind = Change::Kind::File;
        if (archive_entry_size_is_set(e.header) && archive_entry_size(e.header) < 0)
          return fail("entry '{}' has a negative size", displayPath(path));
        // Checked from the header, before any content is read: the entry is
        // left out, the rest of the change set is kept.
        if (auto claimed = static_cast<uint64_t>(archive_entry_size(e.header)); claimed > limits_.maxEntryBytes) {
          return skip(path,
                      fmt::format("file of {}, over the limit of {} for one file", sizeText(claimed),
                                  sizeText(limits_.maxEntryBytes)),
                      claimed);
        }
        if (auto r = stage(path, c); !r) return std::unexpected(r.error());
        break;
      }
    }
    return add(path, std::move(c));
  }

  /// Leaves `path` out, reported; nothing may lie below it. A whiteout of the
  /// same path is dropped too: the baseline entry stays as it is.
  /// A skipped path is still a path of the change set: it may appear once
  /// (after its own whiteout), so what the review lists as skipped is never
  /// also flushed under the same name.
  Result<> skip(const std::string& path, std::string reason, uint64_t size = 0) {
    if (skippedPaths_.count(path)) return fail("entry '{}' appears twice in the change set", displayPath(path));
    if (auto it = map_.find(path); it != map_.end()) {
      if (it->second.kind != Change::Kind::Whiteout)
        return fail("entry '{}' appears twice in the change set", displayPath(path));
      map_.erase(it);
    }
    if (auto below = map_.lower_bound(path + "/"); below != map_.end() && below->first.starts_with(path + "/"))
      return fail("entry '{}' lies below '{}', which the change set does not make a directory",
                  displayPath(below->first), displayPath(path));
    skippedPaths_.insert(path);
    skipped_.push_back({path, std::move(reason), size});
    reader_.note(path, EntryType::File);
    return {};
  }

  Result<> add(const std::string& path, Change c) {
    EntryType type = c.kind == Change::Kind::Dir       ? EntryType::Dir
                     : c.kind == Change::Kind::Symlink ? EntryType::Symlink
                                                       : EntryType::File;
    if (skippedPaths_.count(path)) return fail("entry '{}' appears twice in the change set", displayPath(path));
    auto it = map_.find(path);
    if (it != map_.end()) {
      Change& old = it->second;
      if (old.kind == Change::Kind::Whiteout) {
        c.opaque = c.kind == Change::Kind::Dir;  // replaces the lower entry entirely
      } else if (old.kind == Change::Kind::Dir && old.implied && c.kind == Change::Kind::Dir) {
        c.opaque = old.opaque;
      } else {
        return fail("entry '{}' appears twice in the change set", displayPath(path));
      }
    }
    reader_.note(path, type);
    map_[path] = std::move(c);
    return {};
  }

  Result<> whiteout(const std::string& path, std::string_view base, TarEntryKind kind) {
    if (kind != TarEntryKind::File)
      return fail("whiteout '{}' must be an empty regular file", displayPath(path));
    std::string parent(parentPath(path));
    if (base == kOpaque) {
      auto it = map_.find(parent);
      if (it == map_.end()) {
        Change d;
        d.kind = Change::Kind::Dir;
        d.implied = true;
        d.opaque = true;
        if (!parent.empty()) reader_.note(parent, EntryType::Dir);
        map_[parent] = std::move(d);
      } else if (it->second.kind == Change::Kind::Dir) {
        it->second.opaque = true;
      } else {
        return fail("opaque marker '{}' lies in '{}', which is not a directory", displayPath(path), displayPath(parent));
      }
      return {};
    }
    std::string_view name = base.substr(kWhiteout.size());
    if (name.starts_with(kWhiteout))
      return fail("entry '{}' is an unsupported whiteout meta file", displayPath(path));
    if (name.empty() || name == "." || name == "..")
      return fail("whiteout '{}' names no valid entry", displayPath(path));
    std::string victim = parent.empty() ? std::string(name) : parent + "/" + std::string(name);
    if (skippedPaths_.count(victim))  // a deletion after the skipped entry would make it something else
      return fail("entry '{}' appears twice in the change set", displayPath(victim));
    auto it = map_.find(victim);
    if (it != map_.end()) {
      if (it->second.kind == Change::Kind::Dir) it->second.opaque = true;
      return {};
    }
    Change w;
    w.kind = Change::Kind::Whiteout;
    map_[victim] = std::move(w);
    return {};
  }

  Result<> stage(const std::string& path, Change& c) {
    c.staged = std::to_string(reader_.count());
    Fd out(::openat(stagingFd_, c.staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) return fail("cannot stage '{}': {}", displayPath(path), errnoText(errno));
    Sha256 h;
    bool hole = false;
    auto size = reader_.readContent(path, [&](std::string_view chunk) -> Result<> {
      h.update(chunk);
      if (chunk.find_first_not_of('\0') == std::string_view::npos) {
        if (::lseek(out.get(), static_cast<off_t>(chunk.size()), SEEK_CUR) < 0)
          return fail("cannot stage '{}': {}", displayPath(path), errnoText(errno));
        hole = true;
      } else {
        if (!writeAll(out.get(), chunk)) return fail("cannot stage '{}': {}", displayPath(path), errnoText(errno));
        hole = false;
      }
      return {};
    });
    if (!size) return std::unexpected(size.error());
    if (hole && ::ftruncate(out.get(), static_cast<off_t>(*size)) != 0)
      return fail("cannot stage '{}': {}", displayPath(path), errnoText(errno));
    c.size = *size;
    c.sha256 = h.hex();
    return {};
  }

  static std::string sizeText(uint64_t bytes) {
    if (bytes < (uint64_t{1} << 20)) return fmt::format("{} bytes", bytes);
    return fmt::format("{:.1f} GiB ({} bytes)", static_cast<double>(bytes) / double(uint64_t{1} << 30), bytes);
  }

  static const char* specialName(TarEntryKind k) {
    switch (k) {
      case TarEntryKind::Fifo: return "FIFO";
      case TarEntryKind::Socket: return "socket";
      default: return "device node";
    }
  }

  TarReader reader_;
  TarLimits limits_;
  int stagingFd_;
  ChangeSet::Map map_;
  std::vector<SkippedEntry> skipped_;
  std::set<std::string, std::less<>> skippedPaths_;  ///< the paths of skipped_
};

Result<Fd> makeStagingDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0)
    return fail("cannot create staging directory {}: {}; choose a new session directory", dir, errnoText(errno));
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return fail("cannot open staging directory {}: {}", dir, errnoText(errno));
  return fd;
}

}  // namespace

Result<ChangeSet> ChangeSet::fromArchive(const std::function<int(archive*)>& open, const std::string& stagingDir,
                                        const TarLimits& limits) {
  auto staging = makeStagingDir(stagingDir);
  if (!staging) return std::unexpected(staging.error());
  ArchivePtr a(archive_read_new());
  archive_read_support_format_tar(a.get());
  if (open(a.get()) != ARCHIVE_OK)
    return fail("cannot read the change set: {}", archive_error_string(a.get()) ? archive_error_string(a.get()) : "?");
  ChangeSetReader reader(a.get(), staging->get(), limits);
  auto map = reader.run();
  if (!map) return std::unexpected(map.error());
  ChangeSet cs;
  cs.changes_ = std::move(*map);
  cs.skipped_ = reader.takeSkipped();
  cs.stagingDir_ = stagingDir;
  return cs;
}

bool changeSetIsEmpty(const std::string& tarPath) {
  ArchivePtr a(archive_read_new());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), tarPath.c_str(), 1 << 16) != ARCHIVE_OK) return false;
  archive_entry* entry = nullptr;
  int r;
  while ((r = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
    std::string_view path = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    if (path != "./" && path != "." && path != "/") return false;
  }
  return r == ARCHIVE_EOF;
}

Result<ChangeSet> ChangeSet::fromTar(int fd, const std::string& stagingDir, const TarLimits& limits) {
  return fromArchive([fd](archive* a) { return archive_read_open_fd(a, fd, 1 << 16); }, stagingDir, limits);
}

Result<ChangeSet> ChangeSet::fromTarBuffer(std::string_view data, const std::string& stagingDir, const TarLimits& limits) {
  return fromArchive([data](archive* a) { return archive_read_open_memory(a, data.data(), data.size()); }, stagingDir,
                     limits);
}

Result<ChangeSet> ChangeSet::fromDirectories(const std::string& baseline, const std::string& after,
                                             const std::string& stagingDir, const IgnoreRules& rules) {
  auto before = scanTree(baseline, rules);
  if (!before) return std::unexpected(before.error());
  auto now = scanTree(after, rules);
  if (!now) return std::unexpected(now.error());
  auto staging = makeStagingDir(stagingDir);
  if (!staging) return std::unexpected(staging.error());
  Fd afterFd(::open(after.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!afterFd) return fail("cannot open {}: {}", after, errnoText(errno));
  ChangeSet cs;
  cs.stagingDir_ = stagingDir;
  uint64_t n = 0;
  const auto& old = before->manifest;
  for (const auto& [path, e] : now->manifest.entries()) {
    const ManifestEntry* b = old.find(path);
    bool same = b && b->type == e.type && b->mode == e.mode && b->sha256 == e.sha256 && b->target == e.target;
    if (same) continue;
    Change c;
    c.mode = e.mode;
    if (e.type == EntryType::Dir) {
      c.kind = Change::Kind::Dir;
      c.opaque = b && b->type != EntryType::Dir;
    } else if (e.type == EntryType::Symlink) {
      c.kind = Change::Kind::Symlink;
      c.target = e.target;
    } else {
      c.kind = Change::Kind::File;
      c.staged = std::to_string(++n);
      Fd src;
      if (int err = openBeneath(afterFd.get(), path, O_RDONLY | O_NONBLOCK, 0, src))
        return fail("cannot read '{}' in {}: {}", displayPath(path), after, errnoText(err));
      Fd dst(::openat(staging->get(), c.staged.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!dst) return fail("cannot stage '{}': {}", displayPath(path), errnoText(errno));
      bool ref = false;
      auto h = copyAndHash(src.get(), dst.get(), true, ref, path);
      if (!h) return std::unexpected(h.error());
      if (*h != e.sha256) return fail("'{}' in {} changed while it was compared; retry", displayPath(path), after);
      c.sha256 = *h;
      c.size = e.size;
    }
    cs.changes_[path] = std::move(c);
  }
  for (const auto& [path, e] : old.entries()) {
    if (now->manifest.find(path)) continue;
    std::string parent(parentPath(path));
    const ManifestEntry* p = parent.empty() ? nullptr : now->manifest.find(parent);
    if (!parent.empty() && (!p || p->type != EntryType::Dir)) continue;  // covered by a higher change
    Change w;
    w.kind = Change::Kind::Whiteout;
    cs.changes_[path] = std::move(w);
  }
  return cs;
}

}  // namespace airlock::workspace
