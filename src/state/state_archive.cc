#include "state/state_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/visible_text.h"

namespace airlock::state {
namespace {

using ReadArchive = std::unique_ptr<archive, decltype(&archive_read_free)>;

/// Deeper or longer paths are dropped: every host walk over the state (its
/// removal, packing, listing) then holds a bounded number of fds, and
/// unpacking costs at most kMaxDepth system calls per entry.
constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxPathBytes = 1024;
using WriteArchive = std::unique_ptr<archive, decltype(&archive_write_free)>;

/// The components of `path` ("./a/b/" -> a, b); nullopt when one is "..",
/// "." inside, or the path is absolute.
std::optional<std::vector<std::string>> components(std::string path) {
  while (path.starts_with("./")) path.erase(0, 2);
  while (!path.empty() && path.ends_with("/")) path.pop_back();
  if (path.empty() || path == ".") return std::vector<std::string>{};
  if (path.starts_with("/")) return std::nullopt;
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string c = path.substr(start, end - start);
    if (c.empty() || c == "." || c == "..") return std::nullopt;
    out.push_back(std::move(c));
    start = end + 1;
  }
  return out;
}

/// True when a symlink at depth `depth` (the number of directories between
/// the state's top and the link) with target `target` stays inside the
/// state whatever the other links are: some leading "..", no more than
/// `depth`, then plain names only.
bool symlinkStaysInside(const std::string& target, size_t depth) {
  if (target.empty() || target.starts_with("/") || target.size() > 4096) return false;
  size_t ups = 0;
  bool names = false;
  size_t start = 0;
  while (start <= target.size()) {
    size_t end = target.find('/', start);
    if (end == std::string::npos) end = target.size();
    std::string_view c(target.data() + start, end - start);
    start = end + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (names) return false;
      ++ups;
    } else {
      names = true;
    }
  }
  return ups <= depth;
}

/// Opens (making it when missing) each directory of `dirs` below `root`,
/// never following a symlink. Fails with ELOOP/ENOTDIR when one is not a
/// directory.
Result<Fd> openParent(int root, const std::vector<std::string>& dirs) {
  Fd current(fcntl(root, F_DUPFD_CLOEXEC, 0));
  for (const auto& d : dirs) {
    int fd = openat(current.get(), d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (mkdirat(current.get(), d.c_str(), 0700) != 0 && errno != EEXIST) return fail("mkdir: {}", errnoText(errno));
      fd = openat(current.get(), d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) return fail("{}", errnoText(errno));
    current = Fd(fd);
  }
  return current;
}

std::string describeType(mode_t type, bool hardlink) {
  if (hardlink) return "a hard link";
  switch (type) {
    case AE_IFCHR: return "a character device";
    case AE_IFBLK: return "a block device";
    case AE_IFIFO: return "a FIFO";
    case AE_IFSOCK: return "a socket";
    default: return "an entry of unknown type";
  }
}

}  // namespace

bool isPlainName(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size() || (len == 1 && (c < 0x20 || c == 0x7f))) return false;
    if (len == 2 && c < 0xc2) return false;  // overlong
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += len;
  }
  return true;
}

Result<UnpackSummary> unpackState(const std::string& tarPath, const std::string& destDir,
                                  const std::vector<std::string>& roots, const StateLimits& limits,
                                  const std::vector<std::string>& excluded) {
  if (::mkdir(destDir.c_str(), 0700) != 0) return fail("cannot create {}: {}", destDir, errnoText(errno));
  Fd top(::open(destDir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  UnpackSummary summary;
  auto failed = [&](Error e) -> Result<UnpackSummary> {
    (void)removeTree(destDir);
    return std::unexpected(std::move(e));
  };
  if (!top) return failed(Error{fmt::format("cannot open {}: {}", destDir, errnoText(errno)), exit_code::kInternal});
  auto drop = [&](const std::string& path, const std::string& why) {
    if (summary.dropped.size() < 20) summary.dropped.push_back(visibleText(path) + ": " + why);
    ++summary.droppedCount;
  };
  ReadArchive in(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(in.get());
  if (archive_read_open_filename(in.get(), tarPath.c_str(), 64 << 10) != ARCHIVE_OK)
    return failed(Error{fmt::format("the state is not a tar stream: {}", visibleText(archive_error_string(in.get()) ? archive_error_string(in.get()) : "")), exit_code::kInternal});
  uint64_t seen = 0;
  archive_entry* entry = nullptr;
  std::vector<char> buffer(64 << 10);
  for (;;) {
    int r = archive_read_next_header(in.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      const char* why = archive_error_string(in.get());
      return failed(Error{fmt::format("the state is not a readable tar stream: {}", visibleText(why ? why : "")),
                          exit_code::kInternal});
    }
    if (++seen > limits.maxEntries)
      return failed(Error{fmt::format("the state has more than {} entries: not saved", limits.maxEntries),
                          exit_code::kInternal});
    const char* rawPath = archive_entry_pathname(entry);
    const std::string path = rawPath ? rawPath : "";
    auto parts = components(path);
    if (!parts) {
      drop(path, "an absolute path or one with . or ..");
      continue;
    }
    if (parts->empty()) continue;  // the top directory itself
    std::string joined;
    for (const auto& p : *parts) joined += (joined.empty() ? "" : "/") + p;
    if (parts->size() > kMaxDepth || joined.size() > kMaxPathBytes) {
      drop(joined.substr(0, 200), fmt::format("deeper than {} levels or longer than {} bytes", kMaxDepth,
                                              kMaxPathBytes));
      continue;
    }
    if (!isPlainName(joined)) {
      drop(joined, "a name that is not plain UTF-8");
      continue;
    }
    auto under = [&](const std::vector<std::string>& tops) {
      return std::any_of(tops.begin(), tops.end(), [&](const std::string& p) { return isAtOrBelow(joined, p); });
    };
    if (under(excluded)) continue;
    bool underRoot = under(roots);
    if (!underRoot) {
      drop(joined, "not part of the agent's state");
      continue;
    }
    const mode_t type = archive_entry_filetype(entry);
    const bool hardlink = archive_entry_hardlink(entry) != nullptr;
    if (hardlink || (type != AE_IFDIR && type != AE_IFREG && type != AE_IFLNK)) {
      drop(joined, describeType(type, hardlink));
      continue;
    }
    std::vector<std::string> dirs(parts->begin(), parts->end() - 1);
    auto parent = openParent(top.get(), dirs);
    if (!parent) {
      drop(joined, "below a symlink or a file");
      continue;
    }
    const std::string& name = parts->back();
    const mode_t mode = archive_entry_perm(entry) & 0755;
    if (type == AE_IFDIR) {
      if (mkdirat(parent->get(), name.c_str(), mode | 0700) != 0) {
        struct stat st {};
        if (errno != EEXIST || fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode)) {
          drop(joined, "a directory where something else is");
          continue;
        }
      }
      ++summary.entries;
    } else if (type == AE_IFLNK) {
      const char* rawTarget = archive_entry_symlink(entry);
      const std::string target = rawTarget ? rawTarget : "";
      if (!isPlainName(target) || target.size() > kMaxPathBytes || !symlinkStaysInside(target, dirs.size())) {
        drop(joined, "a symlink that leaves the state (" + visibleText(target) + ")");
        continue;
      }
      if (symlinkat(target.c_str(), parent->get(), name.c_str()) != 0) {
        drop(joined, "a duplicate entry");
        continue;
      }
      ++summary.entries;
    } else {
      Fd out(openat(parent->get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode | 0600));
      if (!out) {
        drop(joined, "a duplicate entry");
        continue;
      }
      for (;;) {
        la_ssize_t n = archive_read_data(in.get(), buffer.data(), buffer.size());
        if (n == 0) break;
        if (n < 0) {
          const char* why = archive_error_string(in.get());
          return failed(Error{fmt::format("the state's tar stream is broken at {}: {}", visibleText(joined),
                                          visibleText(why ? why : "")),
                              exit_code::kInternal});
        }
        summary.bytes += static_cast<uint64_t>(n);
        if (summary.bytes > limits.maxBytes)
          return failed(Error{fmt::format("the state is over its cap of {} MiB: not saved", limits.maxBytes >> 20),
                              exit_code::kInternal});
        if (!writeAll(out.get(), std::string_view(buffer.data(), static_cast<size_t>(n))))
          return failed(Error{fmt::format("cannot write {}/{}: {}", destDir, joined, errnoText(errno)),
                              exit_code::kInternal});
      }
      ++summary.entries;
    }
  }
  return summary;
}

Result<uint64_t> packState(const std::string& dir, const std::string& tarPath, uint32_t uid) {
  namespace fs = std::filesystem;
  Fd tarFile(::open(tarPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!tarFile) return fail("cannot create {}: {}", tarPath, errnoText(errno));
  WriteArchive out(archive_write_new(), archive_write_free);
  archive_write_set_format_pax_restricted(out.get());
  // Names as the bytes they are (unpackState kept only UTF-8): no
  // conversion from the C locale's charset, which would refuse non-ASCII.
  archive_write_set_format_option(out.get(), "pax", "hdrcharset", "BINARY");
  if (archive_write_open_fd(out.get(), tarFile.get()) != ARCHIVE_OK)
    return fail("cannot write {}: {}", tarPath, archive_error_string(out.get()));
  std::vector<fs::path> paths;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) paths.push_back(it->path());
  if (ec) return fail("cannot read {}: {}", dir, ec.message());
  std::sort(paths.begin(), paths.end());
  std::vector<char> buffer(64 << 10);
  for (const auto& p : paths) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return fail("cannot read {}: {}", p.string(), errnoText(errno));
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), p.lexically_relative(dir).c_str());
    archive_entry_set_uid(e.get(), uid);
    archive_entry_set_gid(e.get(), uid);
    archive_entry_set_mtime(e.get(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    archive_entry_set_perm(e.get(), st.st_mode & 0755);
    Fd file;
    if (S_ISDIR(st.st_mode)) {
      archive_entry_set_filetype(e.get(), AE_IFDIR);
    } else if (S_ISLNK(st.st_mode)) {
      archive_entry_set_filetype(e.get(), AE_IFLNK);
      archive_entry_set_symlink(e.get(), fs::read_symlink(p, ec).c_str());
    } else if (S_ISREG(st.st_mode)) {
      file = Fd(::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      if (!file) return fail("cannot read {}: {}", p.string(), errnoText(errno));
      archive_entry_set_filetype(e.get(), AE_IFREG);
      archive_entry_set_size(e.get(), st.st_size);
    } else {
      continue;  // unpackState never makes one
    }
    if (archive_write_header(out.get(), e.get()) != ARCHIVE_OK)
      return fail("cannot write {}: {}", tarPath, archive_error_string(out.get()));
    if (file) {
      int64_t left = st.st_size;
      while (left > 0) {
        ssize_t n = ::read(file.get(), buffer.data(), static_cast<size_t>(std::min<int64_t>(left, buffer.size())));
        if (n <= 0) return fail("cannot read {}: {}", p.string(), n < 0 ? errnoText(errno) : "it shrank");
        if (archive_write_data(out.get(), buffer.data(), static_cast<size_t>(n)) != n)
          return fail("cannot write {}: {}", tarPath, archive_error_string(out.get()));
        left -= n;
      }
    }
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) return fail("cannot write {}: {}", tarPath, archive_error_string(out.get()));
  struct stat st {};
  if (::stat(tarPath.c_str(), &st) != 0) return fail("cannot read {}: {}", tarPath, errnoText(errno));
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace airlock::state
