#include "workspace/linked_git_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "workspace/ignore.h"
#include "workspace/safe_fs.h"

namespace airlock::workspace {
namespace {

/// The worktree's own files that replace the common directory's (the main
/// checkout's): what it has checked out, its staging area, an operation in
/// progress. Its reflog, refs/bisect and config.worktree stay out.
constexpr const char* kWorktreeFiles[] = {"HEAD",       "index",     "ORIG_HEAD",        "MERGE_HEAD",
                                          "MERGE_MODE", "MERGE_MSG", "CHERRY_PICK_HEAD", "REVERT_HEAD"};
constexpr size_t kMaxPointerBytes = 4096;

/// The first line of the small regular file `path` (no symlink followed), "" when it cannot be read.
std::string firstLine(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > off_t(kMaxPointerBytes)) return "";
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t n = readFull(fd.get(), text.data(), text.size());
  text.resize(n < 0 ? 0 : static_cast<size_t>(n));
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

/// `path` made absolute against `base`, then resolved; "" when it does not exist.
std::string realFrom(const std::string& base, const std::string& path) {
  const std::string joined = path.starts_with('/') ? path : base + "/" + path;
  char* real = ::realpath(joined.c_str(), nullptr);
  std::string out = real ? real : "";
  std::free(real);
  return out;
}

bool isDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Result<std::optional<LinkedGitDir>> findLinkedGitDir(const std::string& workspace) {
  const std::string dotGit = workspace + "/.git";
  struct stat st {};
  if (::lstat(dotGit.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const std::string line = firstLine(dotGit);
  constexpr std::string_view kPrefix = "gitdir: ";
  if (!line.starts_with(kPrefix)) return std::nullopt;
  const std::string root = realFrom(workspace, ".");
  LinkedGitDir out;
  out.gitDir = realFrom(workspace, line.substr(kPrefix.size()));
  if (out.gitDir.empty() || !isDir(out.gitDir))
    return failWith(exit_code::kHostNotReady,
                    "{} names {}, which is not a directory; repair the worktree (git worktree repair)", dotGit,
                    line.substr(kPrefix.size()));
  if (out.gitDir == root || out.gitDir.starts_with(root + "/")) return std::nullopt;
  const std::string common = firstLine(out.gitDir + "/commondir");
  out.commonDir = common.empty() ? out.gitDir : realFrom(out.gitDir, common);
  if (out.commonDir.empty() || !isDir(out.commonDir + "/objects") || firstLine(out.gitDir + "/HEAD").empty())
    return failWith(exit_code::kHostNotReady,
                    "{} names {}, which is not a git directory; repair the worktree (git worktree repair)", dotGit,
                    out.gitDir);
  return out;
}

Result<> addLinkedGitDir(const LinkedGitDir& linked, const std::string& snapshotDir, SnapshotResult& snapshot,
                         const SnapshotOptions& options) {
  const std::string dest = snapshotDir + "/.git";
  struct stat st {};
  if (::lstat(dest.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return failWith(exit_code::kInternal, "the snapshot's .git is not the worktree's .git file");
  if (::unlink(dest.c_str()) != 0) return fail("cannot remove the snapshot's .git file: {}", errnoText(errno));
  IgnoreRules rules;
  rules.addPattern("/worktrees/");
  rules.addPattern("/modules/");
  auto snap = takeSnapshot(linked.commonDir, dest, rules, options);
  if (!snap) return std::unexpected(snap.error());
  // The worktree's own files in place of the main checkout's.
  Fd src(::open(linked.gitDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd dst(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!src || !dst) return fail("cannot open {} or {}: {}", linked.gitDir, dest, errnoText(errno));
  auto isWorktreeFile = [](std::string_view path) {
    for (const char* name : kWorktreeFiles)
      if (path == name) return true;
    return false;
  };
  SnapshotResult out = std::move(*snap);
  Manifest manifest;
  for (const auto& [path, entry] : snapshot.manifest.entries())
    if (path != ".git") manifest.add(path, entry);
  ManifestEntry top;  // .git itself, now a directory
  top.type = EntryType::Dir;
  if (struct stat ds{}; ::fstat(dst.get(), &ds) == 0) {
    top.mode = ds.st_mode & 07777;
    top.mtimeNs = static_cast<int64_t>(ds.st_mtim.tv_sec) * 1000000000 + ds.st_mtim.tv_nsec;
  }
  manifest.add(".git", top);
  // The main checkout's own files never stand in for the worktree's.
  for (const auto& [path, entry] : out.manifest.entries())
    if (!isWorktreeFile(path)) manifest.add(".git/" + path, entry);
  for (const char* name : kWorktreeFiles) {
    if (::unlinkat(dst.get(), name, 0) != 0 && errno != ENOENT)
      return fail("cannot replace {}/{}: {}", dest, name, errnoText(errno));
    Fd in;
    if (int e = openBeneath(src.get(), name, O_RDONLY | O_NONBLOCK, 0, in); e != 0) {
      if (e == ENOENT && std::string_view(name) != "HEAD") continue;
      return fail("cannot read {}/{}: {}", linked.gitDir, name, errnoText(e));
    }
    struct stat fs {};
    if (::fstat(in.get(), &fs) != 0 || !S_ISREG(fs.st_mode))
      return fail("{}/{} is not a regular file", linked.gitDir, name);
    Fd copy(::openat(dst.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!copy) return fail("cannot create {}/{}: {}", dest, name, errnoText(errno));
    bool reflinked = false;
    auto digest = copyAndHash(in.get(), copy.get(), true, reflinked, name);
    if (!digest) return std::unexpected(digest.error());
    ::fchmod(copy.get(), fs.st_mode & 0777);
    const timespec times[2] = {fs.st_atim, fs.st_mtim};
    ::futimens(copy.get(), times);
    ManifestEntry m;
    m.type = EntryType::File;
    m.mode = fs.st_mode & 07777;
    m.size = static_cast<uint64_t>(fs.st_size);
    m.mtimeNs = static_cast<int64_t>(fs.st_mtim.tv_sec) * 1000000000 + fs.st_mtim.tv_nsec;
    m.sha256 = *digest;
    manifest.add(std::string(".git/") + name, m);
  }
  snapshot.manifest = std::move(manifest);
  for (auto& k : out.excluded) snapshot.excluded.push_back({".git/" + k.path, k.reason});
  for (auto& g : out.gitCredentialsStripped) snapshot.gitCredentialsStripped.push_back(".git/" + g);
  for (auto& w : out.warnings) snapshot.warnings.push_back(std::move(w));
  snapshot.reflinked += out.reflinked;
  snapshot.copied += out.copied;
  snapshot.bytes += out.bytes;
  return {};
}

}  // namespace airlock::workspace
