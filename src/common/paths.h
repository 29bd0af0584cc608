#pragma once
// Filesystem helpers: mkdir -p, rm -r, temporary directories. Where airlock
// keeps its files (the XDG directories) is in HostContext::dirs.

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock {

/// mkdir -p with `mode` for the directories it creates.
Result<> makeDirs(const std::string& path, unsigned mode = 0755);

/// The absolute path of `path` with every symlink resolved (realpath(3)),
/// or `path` as given when it cannot be resolved (missing, unreadable).
std::string resolvedPath(const std::string& path);

/// Removes a directory tree (never follows symlinks). Missing is not an error.
/// Directories of ours that we cannot list or write (mode 0000, as a hostile
/// tarball leaves them) are given 0700 first.
Result<> removeTree(const std::string& path);

/// True when `path` is `dir` or lies below it, compared as text by whole
/// components ("a/bc" is not below "a/b"); nothing is resolved. An empty
/// `dir` contains nothing.
bool isAtOrBelow(std::string_view path, std::string_view dir);

/// The names in directory `dir`, sorted bytewise, without "." and "..".
/// Fails (with errno's text) when `dir` cannot be opened.
Result<std::vector<std::string>> listDir(const std::string& dir);

/// A temporary directory removed with its contents on destruction.
class TempDir {
 public:
  /// Creates `<parent>/<prefix>XXXXXX`.
  static Result<TempDir> create(const std::string& parent, const std::string& prefix);
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

}  // namespace airlock
