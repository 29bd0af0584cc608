#include "workspace/safe_fs.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "common/sha256.h"
#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

std::atomic<bool> gForceWalk{false};
std::atomic<bool> gNoOpenat2{false};

int openWalk(int rootFd, std::string_view rel, int flags, mode_t mode, Fd& out) {
  Fd dir(::openat(rootFd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return errno;
  size_t pos = 0;
  while (true) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string_view::npos) break;
    std::string part(rel.substr(pos, slash - pos));
    Fd next(::openat(dir.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      int err = errno;
      struct stat st {};
      if (err == ENOTDIR && ::fstatat(dir.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return ELOOP;  // same answer as openat2 with RESOLVE_NO_SYMLINKS
      return err;
    }
    dir = std::move(next);
    pos = slash + 1;
  }
  std::string last(rel.substr(pos));
  int fd = ::openat(dir.get(), last.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return errno;
  out.reset(fd);
  return 0;
}

}  // namespace

void forceComponentWalk(bool force) { gForceWalk = force; }

int openBeneath(int rootFd, std::string_view rel, int flags, mode_t mode, Fd& out) {
  if (rel.empty()) {
    int fd = ::openat(rootFd, ".", (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC);
    if (fd < 0) return errno;
    out.reset(fd);
    return 0;
  }
  if (!gForceWalk && !gNoOpenat2) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_NOFOLLOW | O_CLOEXEC);
    how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    std::string path(rel);
    long fd = ::syscall(SYS_openat2, rootFd, path.c_str(), &how, sizeof how);
    if (fd >= 0) {
      out.reset(static_cast<int>(fd));
      return 0;
    }
    if (errno != ENOSYS) return errno;
    gNoOpenat2 = true;
  }
  return openWalk(rootFd, rel, flags, mode, out);
}

int openParent(int rootFd, std::string_view rel, Fd& out) {
  return openBeneath(rootFd, parentPath(rel), O_PATH | O_DIRECTORY, 0, out);
}

int makeParents(int rootFd, std::string_view rel, std::vector<std::string>& created) {
  std::string_view parent = parentPath(rel);
  size_t pos = 0;
  while (pos <= parent.size() && !parent.empty()) {
    size_t slash = parent.find('/', pos);
    if (slash == std::string_view::npos) slash = parent.size();
    std::string_view prefix = parent.substr(0, slash);
    Fd dir;
    int err = openBeneath(rootFd, prefix, O_PATH | O_DIRECTORY, 0, dir);
    if (err == ENOENT) {
      Fd up;
      if (int e = openParent(rootFd, prefix, up)) return e;
      std::string name(baseName(prefix));
      if (::mkdirat(up.get(), name.c_str(), 0755) != 0 && errno != EEXIST) return errno;
      created.emplace_back(prefix);
    } else if (err != 0) {
      return err;
    }
    pos = slash + 1;
  }
  return 0;
}

Result<std::string> hashFd(int fd, std::string_view what, const ChunkObserver& observe) {
  Sha256 h;
  static thread_local char buf[1 << 17];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot read {}: {}", displayPath(what), errnoText(errno));
    }
    if (n == 0) break;
    h.update(std::string_view(buf, static_cast<size_t>(n)));
    if (observe) observe(std::string_view(buf, static_cast<size_t>(n)));
  }
  return h.hex();
}

Result<LiveState> inspectBeneath(int rootFd, std::string_view rel, bool hash) {
  LiveState st;
  Fd fd;
  int err = openBeneath(rootFd, rel, O_PATH, 0, fd);
  if (err == ENOENT || err == ENOTDIR) return st;  // ENOTDIR: a parent is a plain file, so nothing is here
  if (err == ELOOP || err == EXDEV)
    return fail("'{}' cannot be reached without following a symlink; a parent directory was replaced by a symlink",
                displayPath(rel));
  if (err != 0) return fail("cannot inspect '{}': {}", displayPath(rel), errnoText(err));
  struct stat sb {};
  if (::fstat(fd.get(), &sb) != 0) return fail("cannot inspect '{}': {}", displayPath(rel), errnoText(errno));
  st.mode = sb.st_mode & 07777;
  st.size = static_cast<uint64_t>(sb.st_size);
  if (S_ISREG(sb.st_mode)) {
    st.type = LiveState::Type::File;
    if (hash) {
      Fd rd;
      if (int e = openBeneath(rootFd, rel, O_RDONLY | O_NONBLOCK, 0, rd))
        return fail("cannot read '{}': {}", displayPath(rel), errnoText(e));
      struct stat again {};
      if (::fstat(rd.get(), &again) != 0 || !S_ISREG(again.st_mode))
        return fail("'{}' changed type while it was being read; retry", displayPath(rel));
      auto h = hashFd(rd.get(), rel);
      if (!h) return std::unexpected(h.error());
      st.sha256 = std::move(*h);
    }
  } else if (S_ISDIR(sb.st_mode)) {
    st.type = LiveState::Type::Dir;
  } else if (S_ISLNK(sb.st_mode)) {
    st.type = LiveState::Type::Symlink;
    char buf[4097];
    ssize_t n = ::readlinkat(fd.get(), "", buf, sizeof buf - 1);
    if (n < 0) return fail("cannot read symlink '{}': {}", displayPath(rel), errnoText(errno));
    st.target.assign(buf, static_cast<size_t>(n));
  } else {
    st.type = LiveState::Type::Other;
  }
  return st;
}

Result<std::string> copyAndHash(int src, int dst, bool tryReflink, bool& reflinked, std::string_view what,
                                const ChunkObserver& observe) {
  reflinked = false;
  if (tryReflink && ::ioctl(dst, FICLONE, src) == 0) {
    reflinked = true;
    return hashFd(src, what, observe);
  }
  // Read/write loop; all-zero blocks become holes so sparse files stay sparse.
  Sha256 h;
  static thread_local char buf[1 << 17];
  off_t total = 0;
  bool pendingHole = false;
  for (;;) {
    ssize_t n = ::read(src, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot read {}: {}", displayPath(what), errnoText(errno));
    }
    if (n == 0) break;
    std::string_view chunk(buf, static_cast<size_t>(n));
    h.update(chunk);
    if (observe) observe(chunk);
    total += n;
    bool zero = chunk.find_first_not_of('\0') == std::string_view::npos;
    if (zero) {
      if (::lseek(dst, n, SEEK_CUR) < 0) return fail("cannot copy {}: {}", displayPath(what), errnoText(errno));
      pendingHole = true;
    } else {
      if (!writeAll(dst, chunk)) return fail("cannot copy {}: {}", displayPath(what), errnoText(errno));
      pendingHole = false;
    }
  }
  if (pendingHole && ::ftruncate(dst, total) != 0)
    return fail("cannot copy {}: {}", displayPath(what), errnoText(errno));
  return h.hex();
}

}  // namespace airlock::workspace
