#include "secrets/file_backend.h"

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "secrets/secret_store.h"

namespace airlock::secrets {
namespace {

/// The uid the host's root shows as in this process's user namespace: 0,
/// or the kernel's overflow uid when this namespace does not map it.
uid_t rootAsSeenHere() {
  std::ifstream map("/proc/self/uid_map");
  unsigned long inside = 0, outside = 0, count = 0;
  while (map >> inside >> outside >> count)
    if (outside == 0 && count > 0) return static_cast<uid_t>(inside);
  std::ifstream overflow("/proc/sys/kernel/overflowuid");
  unsigned long uid = 65534;
  overflow >> uid;
  return static_cast<uid_t>(uid);
}

/// True when `gid` is the calling user's own group: named as the user,
/// with no other members listed (a user-private group).
bool privateGroup(gid_t gid) {
  const passwd* pw = ::getpwuid(::geteuid());
  const group* gr = ::getgrgid(gid);
  if (!pw || !gr || std::string(pw->pw_name) != gr->gr_name) return false;
  for (char** m = gr->gr_mem; m && *m; ++m)
    if (std::string(*m) != pw->pw_name) return false;
  return true;
}

}  // namespace

Result<> checkDirectoryChain(const std::string& dir) {
  const uid_t me = ::geteuid();
  const uid_t root = rootAsSeenHere();
  std::string path = dir;
  while (!path.empty()) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) return fail("cannot read {}: {}", path, errnoText(errno));
    } else if (st.st_uid != me && st.st_uid != root) {
      return failWith(exit_code::kHostNotReady,
                      "{} belongs to uid {}, who could swap what is below it; airlock keeps no secrets there (set "
                      "XDG_DATA_HOME to a directory of yours)",
                      path, st.st_uid);
    } else if (S_ISLNK(st.st_mode)) {
      // A link of yours or root's (/home -> var/home on Fedora Atomic, a
      // ~/.local/share moved elsewhere), in a directory only you or root
      // can change (checked next): where it leads must pass the same checks.
      char* real = ::realpath(path.c_str(), nullptr);
      if (!real)
        return failWith(exit_code::kHostNotReady,
                        "{} is a symbolic link that leads nowhere ({}); airlock keeps no "
                        "secrets below it",
                        path, errnoText(errno));
      std::string target(real);
      ::free(real);
      if (auto ok = checkDirectoryChain(target); !ok) return ok;
    } else if (!S_ISDIR(st.st_mode)) {
      return failWith(exit_code::kHostNotReady, "{} is not a directory; airlock keeps no secrets below it", path);
    } else {
      // Writable by others (not sticky): they could rename what is below it.
      // The owner's own user-private group (umask 002 distributions) is the owner.
      const mode_t writers = st.st_uid == me && privateGroup(st.st_gid) ? 0002 : 0022;
      if ((st.st_mode & writers) != 0 && (st.st_mode & S_ISVTX) == 0)
        return failWith(
            exit_code::kHostNotReady,
            "{} is writable by others (mode {:o}); airlock keeps no secrets below it: fix it with chmod go-w {}", path,
            st.st_mode & 07777, path);
    }
    auto slash = path.rfind('/');
    if (slash == std::string::npos || path == "/") break;
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return {};
}

Result<> FileBackend::checkPrivate(const std::string& path, bool directory) const {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail("cannot read {}: {}", path, errnoText(errno));
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return failWith(exit_code::kHostNotReady, "{} is not a {}; move it away", path,
                    directory ? "directory" : "regular file");
  if (st.st_uid != ::geteuid())
    return failWith(exit_code::kHostNotReady, "{} belongs to uid {}, not to you", path, st.st_uid);
  if ((st.st_mode & 077) != 0)
    return failWith(exit_code::kHostNotReady, "{} can be read by others (mode {:o}); fix it with chmod {} {}", path,
                    st.st_mode & 07777, directory ? "700" : "600", path);
  return {};
}

void FileBackend::removeStaleTemporaries() const {
  auto entries = listDir(dir_);
  if (!entries) return;
  for (const auto& entry : *entries) {
    // writeFileAtomic's "NAME.tmp-PID-N" of a write whose process is gone.
    auto at = entry.find(".tmp-");
    if (at == std::string::npos) continue;
    pid_t writer = static_cast<pid_t>(std::atol(entry.c_str() + at + 5));
    if (writer > 0 && ::kill(writer, 0) != 0 && errno == ESRCH) ::unlink((dir_ + "/" + entry).c_str());
  }
}

Result<> FileBackend::store(const std::string& name, const std::string& value) {
  if (!isValidSecretName(name)) return fail("'{}' is not a secret name", name);
  if (auto ok = checkDirectoryChain(dir_); !ok) return ok;
  if (auto made = makeDirs(dir_, 0700); !made) return made;
  if (auto ok = checkPrivate(dir_, true); !ok) return ok;
  removeStaleTemporaries();
  return writeFileAtomic(dir_ + "/" + name, value, 0600);
}

Result<std::optional<std::string>> FileBackend::lookup(const std::string& name) {
  if (!isValidSecretName(name)) return fail("'{}' is not a secret name", name);
  const std::string path = dir_ + "/" + name;
  if (auto ok = checkDirectoryChain(dir_); !ok) return std::unexpected(ok.error());
  if (!pathExists(path)) return std::optional<std::string>();
  if (auto ok = checkPrivate(dir_, true); !ok) return std::unexpected(ok.error());
  if (auto ok = checkPrivate(path, false); !ok) return std::unexpected(ok.error());
  auto value = readFile(path, kMaxSecretBytes);
  if (!value) return fail("cannot read the secret {}: {}", name, value.error().message);
  return std::optional<std::string>(std::move(*value));
}

Result<> FileBackend::erase(const std::string& name) {
  if (!isValidSecretName(name)) return fail("'{}' is not a secret name", name);
  if (!pathExists(dir_)) return {};
  if (auto ok = checkDirectoryChain(dir_); !ok) return ok;
  if (auto ok = checkPrivate(dir_, true); !ok) return ok;
  removeStaleTemporaries();
  const std::string path = dir_ + "/" + name;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail("cannot remove {}: {}", path, errnoText(errno));
  return {};
}

Result<> FileBackend::audit() const {
  if (auto ok = checkDirectoryChain(dir_); !ok) return ok;
  if (!pathExists(dir_)) return {};
  if (auto ok = checkPrivate(dir_, true); !ok) return ok;
  auto entries = listDir(dir_);
  if (!entries) return std::unexpected(entries.error());
  for (const auto& entry : *entries)
    if (auto ok = checkPrivate(dir_ + "/" + entry, false); !ok) return ok;
  return {};
}

}  // namespace airlock::secrets
