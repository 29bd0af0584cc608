#include "vm/asset_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "common/paths.h"

namespace airlock::vm {

void report(const ProgressFn& progress, const std::string& line) {
  if (progress) progress(line);
}

Result<CacheLock> CacheLock::acquire(const std::string& path, const std::string& what, const ProgressFn& progress) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return fail("cannot open lock file {}: {}", path, errnoText(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return CacheLock(std::move(fd));
  if (errno != EWOULDBLOCK) return fail("cannot lock {}: {}", path, errnoText(errno));
  report(progress, "waiting for another airlock process building " + what);
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return fail("cannot lock {}: {}", path, errnoText(errno));
  }
  return CacheLock(std::move(fd));
}

Result<> removeStaleBuilds(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return fail("cannot list {}: {}", dir, errnoText(errno));
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    if (std::string_view(e->d_name).starts_with("tmp-")) stale.push_back(dir + "/" + e->d_name);
  }
  ::closedir(d);
  for (const auto& path : stale) {
    if (auto r = removeTree(path); !r) return r;
  }
  return {};
}

bool pathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

Result<> syncPath(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd || ::fsync(fd.get()) != 0) return fail("cannot sync {} to disk: {}", path, errnoText(errno));
  return {};
}

}  // namespace airlock::vm
