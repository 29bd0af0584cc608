#include "vm/run_dirs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "common/paths.h"

namespace airlock::vm {

Result<Fd> lockRunDir(const std::string& dir) {
  // Made and locked under another name, then renamed: a sweep that finds
  // kRunDirLock always finds it locked (between an open and a flock of the
  // lock itself, a sweep took the lock and removed a new machine's directory).
  const std::string path = dir + "/" + kRunDirLock, staging = path + ".new";
  Fd fd(::open(staging.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 || ::rename(staging.c_str(), path.c_str()) != 0)
    return fail("cannot lock {}: {}", path, errnoText(errno));
  return fd;
}

namespace {

/// Moves `dir`'s scratch disk where its keep-scratch note says, when that is
/// a session's scratch.ext4 under `sessionsDir` whose session still exists.
void keepScratch(const std::string& dir, const std::string& sessionsDir) {
  auto note = readFile(dir + "/" + kRunDirKeep, 4096);
  if (!note) return;
  std::string dest = note->substr(0, note->find('\n'));
  const std::string suffix = "/scratch.ext4";
  if (!dest.starts_with(sessionsDir + "/") || !dest.ends_with(suffix)) return;
  std::string id = dest.substr(sessionsDir.size() + 1, dest.size() - sessionsDir.size() - 1 - suffix.size());
  if (id.empty() || id.find('/') != std::string::npos || id.starts_with('.')) return;
  struct stat session {}, disk {}, existing {};
  const std::string src = dir + "/scratch.ext4";
  if (::lstat((sessionsDir + "/" + id).c_str(), &session) != 0 || !S_ISDIR(session.st_mode)) return;
  if (::lstat(src.c_str(), &disk) != 0 || !S_ISREG(disk.st_mode)) return;
  if (::lstat(dest.c_str(), &existing) == 0) return;
  (void)::rename(src.c_str(), dest.c_str());
}

}  // namespace

size_t sweepStaleRunDirs(const std::string& vmsDir, const std::string& sessionsDir) {
  size_t removed = 0;
  for (const auto& name : listDir(vmsDir).value_or(std::vector<std::string>{})) {
    if (!name.starts_with("vm-")) continue;
    const std::string dir = vmsDir + "/" + name;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    Fd lock(::open((dir + "/" + kRunDirLock).c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (lock) {
      if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its machine runs
    } else if (std::time(nullptr) - st.st_mtime < 60) {
      continue;  // being set up
    }
    keepScratch(dir, sessionsDir);
    if (removeTree(dir)) ++removed;
  }
  return removed;
}

}  // namespace airlock::vm
