#include "common/paths.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <algorithm>
#include <filesystem>

namespace airlock {

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

std::string resolvedPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string out = real;
  std::free(real);
  return out;
}

namespace {

/// Gives the directories of the tree at `path` (not followed through
/// symlinks) mode 0700, top down, where we may: a directory that we own
/// but cannot list or write (0000 from an unpacked tarball) blocks removal.
void openUpDirectories(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  if ((st.st_mode & 0700) != 0700) (void)::chmod(path.c_str(), 0700);
  auto names = listDir(path);
  if (!names) return;
  for (const auto& name : *names) openUpDirectories(path + "/" + name);
}

}  // namespace

Result<> removeTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (!ec) return {};
  openUpDirectories(path);
  ec.clear();
  std::filesystem::remove_all(path, ec);
  if (ec) return fail("cannot remove {}: {}", path, ec.message());
  return {};
}

Result<std::vector<std::string>> listDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return fail("cannot list {}: {}", dir, errnoText(errno));
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
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

bool isAtOrBelow(std::string_view path, std::string_view dir) {
  return !dir.empty() && path.starts_with(dir) && (path.size() == dir.size() || path[dir.size()] == '/');
}

}  // namespace airlock
