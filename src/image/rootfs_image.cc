#include "image/rootfs_image.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"

namespace airlock::image {
namespace {

/// Bump when the mkfs.erofs options or the digest's contents change.
constexpr std::string_view kFormatVersion = "airlock-rootfs-1";

/// Hashes one length-prefixed field, so no two different records hash alike.
void field(Sha256& h, std::string_view value) {
  h.update(fmt::format("{}:", value.size()));
  h.update(value);
}

struct CloseDir {
  void operator()(DIR* d) const { ::closedir(d); }
};

/// Walks a tree for rootfsDigest(), feeding one record per entry into `tree`.
class DigestWalk {
 public:
  explicit DigestWalk(std::string root) : root_(std::move(root)) {}

  Result<std::string> run() {
    field(tree_, kFormatVersion);
    Fd rootFd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!rootFd) return failWith(exit_code::kImage, "cannot open rootfs directory {}: {}", root_, errnoText(errno));
    struct stat st {};
    if (::fstat(rootFd.get(), &st) != 0)
      return failWith(exit_code::kImage, "cannot stat {}: {}", root_, errnoText(errno));
    if (auto r = entry(rootFd.get(), ".", "", st); !r) return std::unexpected(r.error());
    return tree_.hex();
  }

 private:
  std::string fullPath(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }

  std::unexpected<Error> readError(const std::string& rel, int err) const {
    return failWith(exit_code::kImage, "cannot read {} of the rootfs: {}", fullPath(rel), errnoText(err));
  }

  Result<> entry(int parentFd, const char* name, const std::string& rel, const struct stat& st) {
    field(tree_, rel);
    field(tree_, fmt::format("{:o} {}.{:09}", st.st_mode, st.st_mtim.tv_sec, st.st_mtim.tv_nsec));
    if (auto r = xattrs(rel); !r) return r;
    switch (st.st_mode & S_IFMT) {
      case S_IFDIR: return directory(parentFd, name, rel);
      case S_IFREG: return regularFile(parentFd, name, rel, st);
      case S_IFLNK: {
        std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
        ssize_t n = ::readlinkat(parentFd, name, target.data(), target.size());
        if (n < 0) return readError(rel, errno);
        target.resize(static_cast<size_t>(n));
        field(tree_, target);
        return {};
      }
      case S_IFCHR:
      case S_IFBLK: field(tree_, fmt::format("{}:{}", major(st.st_rdev), minor(st.st_rdev))); return {};
      default: return {};
    }
  }

  Result<> xattrs(const std::string& rel) {
    std::string path = fullPath(rel);
    ssize_t size = ::llistxattr(path.c_str(), nullptr, 0);
    if (size < 0 && errno == ENOTSUP) return {};
    if (size < 0) return readError(rel, errno);
    std::string names(static_cast<size_t>(size), '\0');
    size = ::llistxattr(path.c_str(), names.data(), names.size());
    if (size < 0) return readError(rel, errno);
    names.resize(static_cast<size_t>(size));
    std::vector<std::string> sorted;
    for (size_t at = 0; at < names.size();) {
      size_t end = names.find('\0', at);
      if (end == std::string::npos) end = names.size();
      sorted.push_back(names.substr(at, end - at));
      at = end + 1;
    }
    std::sort(sorted.begin(), sorted.end());
    for (const auto& xname : sorted) {
      ssize_t len = ::lgetxattr(path.c_str(), xname.c_str(), nullptr, 0);
      if (len < 0) return readError(rel, errno);
      std::string value(static_cast<size_t>(len), '\0');
      len = ::lgetxattr(path.c_str(), xname.c_str(), value.data(), value.size());
      if (len < 0) return readError(rel, errno);
      value.resize(static_cast<size_t>(len));
      field(tree_, xname);
      field(tree_, value);
    }
    return {};
  }

  Result<> regularFile(int parentFd, const char* name, const std::string& rel, const struct stat& st) {
    field(tree_, std::to_string(st.st_size));
    if (st.st_nlink > 1) {
      auto [it, first] = firstLink_.try_emplace({st.st_dev, st.st_ino}, rel);
      if (!first) {
        field(tree_, "link to " + it->second);
        return {};
      }
    }
    Fd fd(::openat(parentFd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) return readError(rel, errno);
    Sha256 content;
    std::string buf(1 << 17, '\0');
    for (;;) {
      ssize_t n = ::read(fd.get(), buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return readError(rel, errno);
      if (n == 0) break;
      content.update(std::string_view(buf.data(), static_cast<size_t>(n)));
    }
    field(tree_, content.hex());
    return {};
  }

  Result<> directory(int parentFd, const char* name, const std::string& rel) {
    int fd = ::openat(parentFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return readError(rel, errno);
    std::unique_ptr<DIR, CloseDir> dir(::fdopendir(fd));
    if (!dir) {
      int err = errno;
      ::close(fd);
      return readError(rel, err);
    }
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(dir.get())) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    if (errno != 0) return readError(rel, errno);
    std::sort(names.begin(), names.end());
    for (const auto& child : names) {
      std::string childRel = rel.empty() ? child : rel + "/" + child;
      struct stat st {};
      if (::fstatat(::dirfd(dir.get()), child.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return readError(childRel, errno);
      if (auto r = entry(::dirfd(dir.get()), child.c_str(), childRel, st); !r) return r;
    }
    return {};
  }

  std::string root_;
  Sha256 tree_;
  std::map<std::pair<dev_t, ino_t>, std::string> firstLink_;
};

}  // namespace

Result<> checkRootfsDir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return failWith(exit_code::kImage,
                    "rootfs directory {} does not exist ({}); pass a directory holding a root filesystem", dir,
                    errnoText(errno));
  if (!S_ISDIR(st.st_mode)) return failWith(exit_code::kImage, "rootfs {} is not a directory", dir);
  Fd root(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return failWith(exit_code::kImage, "cannot open rootfs directory {}: {}", dir, errnoText(errno));
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT;
  Fd sh(static_cast<int>(::syscall(SYS_openat2, root.get(), "bin/sh", &how, sizeof how)));
  if (!sh && errno == ENOSYS)
    return failWith(exit_code::kHostNotReady, "this host kernel lacks openat2(2); airlock needs Linux 5.6 or newer");
  if (!sh || ::fstat(sh.get(), &st) != 0)
    return failWith(exit_code::kImage, "{} does not look like a root filesystem: no /bin/sh", dir);
  if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0)
    return failWith(exit_code::kImage, "{} does not look like a root filesystem: /bin/sh is not an executable file",
                    dir);
  return {};
}

Result<std::string> rootfsDigest(const std::string& dir) { return DigestWalk(dir).run(); }

namespace {

Result<std::string> findOrBuildRootfsImage(const std::string& cacheDir, const std::string& dir,
                                           const ProgressFn& progress) {
  if (auto r = checkRootfsDir(dir); !r) return std::unexpected(r.error());
  auto digest = rootfsDigest(dir);
  if (!digest) return std::unexpected(digest.error());
  const std::string cache = rootfsCacheDir(cacheDir);
  const std::string image = cache + "/" + *digest + ".erofs";
  if (pathExists(image)) return image;

  if (auto r = makeDirs(cache); !r) return std::unexpected(r.error());
  auto lock = FileLock::acquire(cache + "/.lock", "building rootfs images", progress);
  if (!lock) return std::unexpected(lock.error());
  if (pathExists(image)) return image;
  if (auto r = removeStaleBuilds(cache); !r) return std::unexpected(r.error());
  auto work = TempDir::create(cache, "tmp-");
  if (!work) return std::unexpected(work.error());
  std::string built = work->path() + "/image.erofs";
  report(progress, fmt::format("building erofs image of {}", dir));
  if (auto r = runChecked({"mkfs.erofs", "--quiet", "--all-root", "--preserve-mtime", built, dir}); !r)
    return fail("cannot build the erofs image of {}: {}", dir, r.error().message);
  if (auto r = syncPath(built); !r) return std::unexpected(r.error());
  if (::rename(built.c_str(), image.c_str()) != 0)
    return fail("cannot rename {} to {}: {}", built, image, errnoText(errno));
  if (auto r = syncPath(cache); !r) return std::unexpected(r.error());
  return image;
}

}  // namespace

std::string rootfsCacheDir(const std::string& cacheDir) { return cacheDir + "/rootfs"; }

Result<std::string> ensureRootfsImage(const std::string& cacheDir, const std::string& dir,
                                      const ProgressFn& progress) {
  auto image = findOrBuildRootfsImage(cacheDir, dir, progress);
  if (!image && image.error().code == Error{}.code) image.error().code = exit_code::kImage;
  return image;
}

}  // namespace airlock::image
