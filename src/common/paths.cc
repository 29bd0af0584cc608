#include "common/paths.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace airlock {
namespace {

std::string homeDir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (passwd* pw = getpwuid(getuid())) return pw->pw_dir;
  return "/tmp";
}

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

}  // namespace

std::string cacheDir() {
  if (const char* d = std::getenv("AIRLOCK_CACHE_DIR"); d && *d) return d;
  return envOr("XDG_CACHE_HOME", homeDir() + "/.cache") + "/airlock";
}

std::string stateDir() { return envOr("XDG_STATE_HOME", homeDir() + "/.local/state") + "/airlock"; }

Result<std::string> runtimeDir() {
  std::string dir;
  if (const char* r = std::getenv("XDG_RUNTIME_DIR"); r && *r && access(r, W_OK) == 0)
    dir = std::string(r) + "/airlock";
  else
    dir = "/tmp/airlock-" + std::to_string(getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail("cannot create runtime directory {}: {}", dir, errnoText(errno));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
    return fail("runtime directory {} is not a directory owned by you; remove it", dir);
  return dir;
}

Result<> makeDirs(const std::string& path, unsigned mode) {
  std::error_code ec;
  std::filesystem::path p(path);
  std::filesystem::path built;
  for (const auto& part : p) {
    built /= part;
    if (mkdir(built.c_str(), mode) != 0 && errno != EEXIST)
      return fail("cannot create directory {}: {}", built.string(), errnoText(errno));
  }
  return {};
}

Result<> removeTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return fail("cannot remove {}: {}", path, ec.message());
  return {};
}

Result<TempDir> TempDir::create(const std::string& parent, const std::string& prefix) {
  if (auto r = makeDirs(parent, 0700); !r) return std::unexpected(r.error());
  std::string tmpl = parent + "/" + prefix + "XXXXXX";
  if (!mkdtemp(tmpl.data())) return fail("cannot create a temporary directory in {}: {}", parent, errnoText(errno));
  return TempDir(tmpl);
}

TempDir::~TempDir() {
  if (!path_.empty()) (void)removeTree(path_);
}

std::string selfDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

}  // namespace airlock
