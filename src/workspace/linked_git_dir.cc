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

namespace airlock::workspace {
namespace {

/// What of the common directory the copy takes: the repository itself
/// (objects, refs, packed-refs, config, info/, shallow; HEAD, which the
/// worktree's replaces, marks it a repository for the config's clean-up).
/// Everything else is the main checkout's (its index, reflog, rebase or
/// sparse-checkout state, LFS cache) or another checkout's (worktrees/,
/// modules/, a checkout inside a bare repository).
constexpr const char* kCommonRules[] = {"/*",
                                        "!/objects/",
                                        "!/refs/",
                                        "!/packed-refs",
                                        "!/config",
                                        "!/info/",
                                        "!/shallow",
                                        "!/HEAD",
                                        "/info/sparse-checkout",
                                        "/refs/bisect/",
                                        "/refs/worktree/",
                                        "/refs/rewritten/"};
/// What of the worktree's own git directory the copy takes: its checkout's
/// state and nothing else (not its pointers to host paths, lock, reflog,
/// FETCH_HEAD, config.worktree, nor a stray config or hooks/, which would
/// not be cleaned like the repository's).
constexpr const char* kWorktreeRules[] = {
    "/*",          "!/HEAD",          "!/index",        "!/sharedindex.*", "!/ORIG_HEAD",     "!/MERGE_*",
    "!/CHERRY_PICK_HEAD", "!/REVERT_HEAD", "!/AUTO_MERGE", "!/BISECT_*",   "!/rebase-merge/", "!/rebase-apply/",
    "!/sequencer/", "!/refs/",         "!/info/",        "/info/*",         "!/info/sparse-checkout"};
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
  if (::lstat(dest.c_str(), &st) != 0 && errno == ENOENT) return {};  // kept out (--exclude .git)
  if (!S_ISREG(st.st_mode))
    return failWith(exit_code::kInternal, "the snapshot's .git is not the worktree's .git file");
  if (::unlink(dest.c_str()) != 0) return fail("cannot remove the snapshot's .git file: {}", errnoText(errno));
  IgnoreRules commonRules, worktreeRules;
  for (const char* rule : kCommonRules) commonRules.addPattern(rule);
  for (const char* rule : kWorktreeRules) worktreeRules.addPattern(rule);
  auto common = takeSnapshot(linked.commonDir, dest, commonRules, options);
  if (!common) return std::unexpected(common.error());
  // The worktree's own state (HEAD, index, a rebase, sparse checkout, its
  // refs/bisect...) over the common directory's, moved in from a second copy.
  const std::string own = snapshotDir + ".worktree-git";
  struct RemovedAtExit {
    const std::string& path;
    ~RemovedAtExit() { (void)removeTree(path); }
  } removed{own};
  auto worktree = takeSnapshot(linked.gitDir, own, worktreeRules, options);
  if (!worktree) return std::unexpected(worktree.error());
  Fd from(::open(own.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd into(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!from || !into) return fail("cannot open {} or {}: {}", own, dest, errnoText(errno));
  for (const auto& [path, entry] : worktree->manifest.entries()) {  // parents first
    const bool ok = entry.type == EntryType::Dir
                        ? ::mkdirat(into.get(), path.c_str(), entry.mode & 07777) == 0 || errno == EEXIST
                        : ::renameat(from.get(), path.c_str(), into.get(), path.c_str()) == 0;
    if (!ok) return fail("cannot move {}/{} into {}: {}", own, path, dest, errnoText(errno));
  }
  // A bare common directory's config says so: the copy has a work tree.
  {
    Fd config(::openat(into.get(), "config", O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
    char last = '\n';  // a config without a final newline must not swallow the section
    struct stat cs {};
    if (config && ::fstat(config.get(), &cs) == 0 && cs.st_size > 0) (void)!::pread(config.get(), &last, 1, cs.st_size - 1);
    if (!config || !writeAll(config.get(), std::string(last == '\n' ? "" : "\n") + "[core]\n\tbare = false\n"))
      return fail("cannot write {}/config: {}", dest, errnoText(errno));
  }
  Manifest manifest;
  for (const auto& [path, entry] : snapshot.manifest.entries())
    if (path != ".git") manifest.add(path, entry);
  ManifestEntry top;  // .git itself, now a directory
  top.type = EntryType::Dir;
  if (struct stat ds{}; ::fstat(into.get(), &ds) == 0) {
    top.mode = ds.st_mode & 07777;
    top.mtimeNs = static_cast<int64_t>(ds.st_mtim.tv_sec) * 1000000000 + ds.st_mtim.tv_nsec;
  }
  manifest.add(".git", top);
  for (const SnapshotResult* part : {&*common, &*worktree}) {  // the worktree's win
    for (const auto& [path, entry] : part->manifest.entries()) manifest.add(".git/" + path, entry);
    for (const auto& k : part->excluded)  // what the rules above leave out is not the user's ignoring
      if (k.reason != KeptOutReason::Ignored) snapshot.excluded.push_back({".git/" + k.path, k.reason});
    for (const auto& g : part->gitCredentialsStripped) snapshot.gitCredentialsStripped.push_back(".git/" + g);
    for (const auto& w : part->warnings) snapshot.warnings.push_back(w);
    snapshot.reflinked += part->reflinked;
    snapshot.copied += part->copied;
    snapshot.bytes += part->bytes;
  }
  snapshot.manifest = std::move(manifest);
  return {};
}

Result<SnapshotResult> snapshotWorkspace(const std::string& workspace, const std::string& snapshotDir,
                                         const IgnoreRules& rules, const SnapshotOptions& options,
                                         std::optional<LinkedGitDir>* linked) {
  auto snap = takeSnapshot(workspace, snapshotDir, rules, options);
  if (!snap) return std::unexpected(snap.error());
  auto found = findLinkedGitDir(workspace);
  if (!found) return std::unexpected(found.error());
  if (*found)
    if (auto r = addLinkedGitDir(**found, snapshotDir, *snap, options); !r) return std::unexpected(r.error());
  if (linked) *linked = std::move(*found);
  return snap;
}

}  // namespace airlock::workspace
