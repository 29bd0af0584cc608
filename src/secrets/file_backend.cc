#include "secrets/file_backend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "secrets/secret_store.h"

namespace airlock::secrets {

Result<> FileBackend::checkPrivate(const std::string& path, bool directory) const {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail("cannot read {}: {}", path, errnoText(errno));
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return fail("{} is not a {}; move it away", path, directory ? "directory" : "regular file");
  if (st.st_uid != ::geteuid()) return fail("{} belongs to uid {}, not to you", path, st.st_uid);
  if ((st.st_mode & 077) != 0)
    return fail("{} can be read by others (mode {:o}); fix it with chmod {} {}", path, st.st_mode & 07777,
                directory ? "700" : "600", path);
  return {};
}

Result<> FileBackend::store(const std::string& name, const std::string& value) {
  if (!isValidSecretName(name)) return fail("'{}' is not a secret name", name);
  if (auto made = makeDirs(dir_, 0700); !made) return made;
  if (auto ok = checkPrivate(dir_, true); !ok) return ok;
  return writeFileAtomic(dir_ + "/" + name, value, 0600);
}

Result<std::optional<std::string>> FileBackend::lookup(const std::string& name) {
  if (!isValidSecretName(name)) return fail("'{}' is not a secret name", name);
  const std::string path = dir_ + "/" + name;
  if (!pathExists(path)) return std::optional<std::string>();
  if (auto ok = checkPrivate(dir_, true); !ok) return std::unexpected(ok.error());
  if (auto ok = checkPrivate(path, false); !ok) return std::unexpected(ok.error());
  auto value = readFile(path, kMaxSecretBytes);
  if (!value) return fail("cannot read the secret {}: {}", name, value.error().message);
  return std::optional<std::string>(std::move(*value));
}

Result<> FileBackend::erase(const std::string& name) {
  if (!isValidSecretName(name)) return fail("'{}' is not a secret name", name);
  const std::string path = dir_ + "/" + name;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail("cannot remove {}: {}", path, errnoText(errno));
  return {};
}

}  // namespace airlock::secrets
