#include "common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "common/interrupt.h"
#include "common/paths.h"

namespace airlock {

void report(const ProgressFn& progress, const std::string& line) {
  if (progress) progress(line);
}

Result<FileLock> FileLock::acquire(const std::string& path, const std::string& what, const ProgressFn& progress) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return fail("cannot open lock file {}: {}", path, errnoText(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return FileLock(std::move(fd));
  if (errno != EWOULDBLOCK) return fail("cannot lock {}: {}", path, errnoText(errno));
  report(progress, "waiting for another airlock process " + what);
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return fail("cannot lock {}: {}", path, errnoText(errno));
    if (int sig = interruptSignal(); sig != 0)
      return std::unexpected(interruptedError(sig, "while waiting for another airlock process " + what));
  }
  return FileLock(std::move(fd));
}

bool lockHeld(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  return fd && ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0;
}

Result<> removeStaleBuilds(const std::string& dir) {
  auto names = listDir(dir);
  if (!names) return std::unexpected(names.error());
  for (const auto& name : *names) {
    if (!name.starts_with("tmp-")) continue;
    if (auto r = removeTree(dir + "/" + name); !r) return r;
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

}  // namespace airlock
