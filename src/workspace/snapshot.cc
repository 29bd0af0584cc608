#include "workspace/snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/interrupt.h"
#include "common/paths.h"
#include "workspace/git_credentials.h"
#include "workspace/private_key_scan.h"
#include "workspace/relpath.h"
#include "workspace/safe_fs.h"

namespace airlock::workspace {
namespace {

/// Files below this size are copied rather than cloned (measured on XFS:
/// FICLONE of many small files costs more than writing them).
constexpr off_t kMinCloneBytes = 64 << 10;

/// Git config files larger than this are copied as they are (git's own are a few KiB).
constexpr off_t kMaxGitConfigBytes = 1 << 20;
/// FETCH_HEAD and reflogs larger than this are copied as they are (a reflog
/// gains a line per commit, checkout and fetch).
constexpr off_t kMaxGitLogBytes = 64 << 20;

/// What a run does: copy (takeSnapshot), hash (scanTree) or only find what
/// a copy would keep out (findKeptOut, with or without reading the files).
enum class Mode { Copy, Scan, FindByNames, FindAll };

struct WalkEntry {
  std::string path;
  EntryType type;
  struct stat st;
  GitFileKind git = GitFileKind::None;  ///< credentials stripped from the copy (classifyGitFiles)
};

using InodeKey = std::pair<dev_t, ino_t>;
InodeKey inodeOf(const struct stat& st) { return {st.st_dev, st.st_ino}; }

/// What the walk kept out that a hard link elsewhere could share.
struct KeptOutInodes {
  std::set<InodeKey> files;       ///< kept-out regular files with more than one link
  std::vector<std::string> dirs;  ///< kept-out directories (their contents were not walked)
};

KeptOutReason reasonFor(IgnoreVerdict v, std::string_view rel) {
  if (v == IgnoreVerdict::Ignored) return KeptOutReason::Ignored;
  return IgnoreRules::isAirlockConfig(rel) ? KeptOutReason::AirlockConfig : KeptOutReason::SecretName;
}

const char* specialKind(mode_t m) {
  if (S_ISFIFO(m)) return "FIFO";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  return "special file";
}

// Lists the tree below rootFd, directories before their contents, applying
// the ignore rules. Never opens anything but directories.
Result<std::vector<WalkEntry>> walk(int rootFd, const IgnoreRules& rules, SnapshotResult& res, KeptOutInodes& kept) {
  std::vector<WalkEntry> out;
  std::vector<std::string> pending{""};
  while (!pending.empty()) {
    std::string dirPath = std::move(pending.back());
    pending.pop_back();
    Fd dfd;
    if (int e = openBeneath(rootFd, dirPath, O_RDONLY | O_DIRECTORY, 0, dfd))
      return failWith(exit_code::kHostNotReady, "cannot read directory '{}': {}; fix its permissions, or leave it out "
                      "with --exclude {}/", displayPath(dirPath), errnoText(e), displayPath(dirPath));
    int dupFd = ::dup(dfd.get());
    DIR* dir = dupFd >= 0 ? ::fdopendir(dupFd) : nullptr;
    if (!dir) {
      if (dupFd >= 0) ::close(dupFd);
      return fail("cannot list directory '{}': {}", displayPath(dirPath), errnoText(errno));
    }
    std::vector<std::string> subdirs;
    while (dirent* de = ::readdir(dir)) {
      std::string_view name = de->d_name;
      if (name == "." || name == "..") continue;
      std::string rel = dirPath.empty() ? std::string(name) : dirPath + "/" + std::string(name);
      WalkEntry e{rel, EntryType::File, {}};
      if (::fstatat(dfd.get(), de->d_name, &e.st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // vanished while we looked
        int err = errno;
        ::closedir(dir);
        return fail("cannot inspect '{}': {}", displayPath(rel), errnoText(err));
      }
      bool isDir = S_ISDIR(e.st.st_mode);
      if (auto v = rules.matchEntry(rel, isDir); v != IgnoreVerdict::Included) {
        res.excluded.push_back({rel, reasonFor(v, rel)});
        if (isDir) kept.dirs.push_back(rel);
        else if (S_ISREG(e.st.st_mode) && e.st.st_nlink > 1) kept.files.insert(inodeOf(e.st));
        continue;
      }
      if (S_ISREG(e.st.st_mode)) e.type = EntryType::File;
      else if (isDir) e.type = EntryType::Dir, subdirs.push_back(rel);
      else if (S_ISLNK(e.st.st_mode)) e.type = EntryType::Symlink;
      else {
        res.warnings.push_back(fmt::format("skipped {} '{}': FIFOs, sockets and device nodes are not copied",
                                           specialKind(e.st.st_mode), displayPath(rel)));
        continue;
      }
      out.push_back(std::move(e));
    }
    ::closedir(dir);
    std::sort(subdirs.rbegin(), subdirs.rend());
    for (auto& s : subdirs) pending.push_back(std::move(s));
  }
  return out;
}

/// Calls `visit` with the lstat of every entry below the directory `rel`
/// (never following a symlink); unreadable directories are passed over.
/// `visit` returns false to stop.
template <typename Visit>
void walkBelow(int rootFd, const std::string& rel, Visit&& visit) {
  std::vector<std::string> pending{rel};
  while (!pending.empty()) {
    std::string dirPath = std::move(pending.back());
    pending.pop_back();
    Fd dfd;
    if (openBeneath(rootFd, dirPath, O_RDONLY | O_DIRECTORY, 0, dfd) != 0) continue;
    int dupFd = ::dup(dfd.get());
    DIR* dir = dupFd >= 0 ? ::fdopendir(dupFd) : nullptr;
    if (!dir) {
      if (dupFd >= 0) ::close(dupFd);
      continue;
    }
    while (dirent* de = ::readdir(dir)) {
      std::string_view name = de->d_name;
      if (name == "." || name == "..") continue;
      struct stat st {};
      if (::fstatat(dfd.get(), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) pending.push_back(dirPath + "/" + std::string(name));
      if (!visit(st)) {
        ::closedir(dir);
        return;
      }
    }
    ::closedir(dir);
  }
}

/// Removes from `entries` every regular file that shares its inode with a
/// kept-out file, or with a git file whose copy is stripped (a second name
/// would carry the credentials raw), recording each as KeptOutReason::HardLink.
/// Files whose links the walk did not all see are looked for in the kept-out
/// directories.
void keepOutHardLinks(int rootFd, std::vector<WalkEntry>& entries, const KeptOutInodes& kept, SnapshotResult& res) {
  std::map<InodeKey, nlink_t> seen;  // links the walk found, per multiply-linked inode
  std::set<InodeKey> git;            // inodes of git files the copy strips
  for (const auto& e : entries) {
    if (e.type != EntryType::File || e.st.st_nlink <= 1) continue;
    ++seen[inodeOf(e.st)];
    if (e.git != GitFileKind::None) git.insert(inodeOf(e.st));
  }
  if (seen.empty()) return;
  std::set<InodeKey> linked;  // inodes shared with a kept-out file
  std::set<InodeKey> open;    // inodes with links the walk did not see
  for (const auto& e : entries) {
    if (e.type != EntryType::File || e.st.st_nlink <= 1) continue;
    InodeKey k = inodeOf(e.st);
    if (kept.files.count(k)) linked.insert(k);
    else if (seen[k] < e.st.st_nlink) open.insert(k);
  }
  std::erase_if(entries, [&](const WalkEntry& e) {
    bool out = e.type == EntryType::File && e.st.st_nlink > 1 && e.git == GitFileKind::None &&
               !linked.count(inodeOf(e.st)) && git.count(inodeOf(e.st));
    if (out) res.excluded.push_back({e.path, KeptOutReason::HardLink});
    return out;
  });
  for (const auto& dir : kept.dirs) {
    if (open.empty()) break;
    walkBelow(rootFd, dir, [&](const struct stat& st) {
      if (S_ISREG(st.st_mode) && st.st_nlink > 1 && open.erase(inodeOf(st))) linked.insert(inodeOf(st));
      return !open.empty();
    });
  }
  if (linked.empty()) return;
  std::erase_if(entries, [&](const WalkEntry& e) {
    bool out = e.type == EntryType::File && e.st.st_nlink > 1 && linked.count(inodeOf(e.st));
    if (out) res.excluded.push_back({e.path, KeptOutReason::HardLink});
    return out;
  });
}

/// Largest git file of `kind` whose copy is stripped.
off_t maxGitBytes(GitFileKind kind) {
  return kind == GitFileKind::UrlsOnly ? kMaxGitLogBytes : kMaxGitConfigBytes;
}

/// `text` (a git file of `kind`) without its credentials (and, a
/// repository's own config, without what sanitizeRepoConfig() drops);
/// `edits` as for stripGitCredentials().
std::string stripGitFile(GitFileKind kind, std::string_view text, size_t& edits) {
  if (kind == GitFileKind::UrlsOnly) return stripUrlUserinfo(text, edits);
  if (kind == GitFileKind::Config) return stripGitCredentials(text, edits);
  size_t dropped = 0;
  std::string kept = sanitizeRepoConfig(text, dropped);
  std::string out = stripGitCredentials(kept, edits);
  edits += dropped;
  return out;
}

/// Removes the credentials from the snapshot copy `dst` of the git file
/// `rel` (`size` bytes, of `kind`); true when it changed.
Result<bool> stripCopiedGitFile(int dst, std::string_view rel, off_t size, GitFileKind kind) {
  if (size > maxGitBytes(kind)) return false;
  std::string text(static_cast<size_t>(size), '\0');
  ssize_t n = ::pread(dst, text.data(), text.size(), 0);
  if (n < 0) return fail("cannot read the snapshot copy of '{}': {}", displayPath(rel), errnoText(errno));
  text.resize(static_cast<size_t>(n));
  size_t edits = 0;
  std::string clean = stripGitFile(kind, text, edits);
  if (edits == 0) return false;
  if (::ftruncate(dst, 0) != 0 || ::lseek(dst, 0, SEEK_SET) != 0 || !writeAll(dst, clean))
    return fail("cannot write the snapshot copy of '{}': {}", displayPath(rel), errnoText(errno));
  return true;
}

/// For findKeptOut(FindAll): reads `src` for a private key and, for a git
/// config file, for credentials a copy would remove.
Result<> inspectContent(int src, std::string_view rel, off_t size, GitFileKind kind, bool& privateKey,
                        bool& gitCredentials) {
  privateKey = gitCredentials = false;
  if (kind != GitFileKind::None && size <= maxGitBytes(kind)) {
    std::string text(static_cast<size_t>(size), '\0');
    ssize_t n = readFull(src, text.data(), text.size());
    if (n < 0) return fail("cannot read '{}': {}", displayPath(rel), errnoText(errno));
    text.resize(static_cast<size_t>(n));
    size_t edits = 0;
    (void)stripGitFile(kind, text, edits);
    gitCredentials = edits > 0;
    privateKey = hasPrivateKeyMarker(text);
    return {};
  }
  auto found = fdHoldsPrivateKey(src, rel);
  if (!found) return std::unexpected(found.error());
  privateKey = *found;
  return {};
}

/// Reads the regular file `rel` (at most kMaxGitConfigBytes); "" when it cannot.
std::string readSmall(int rootFd, const std::string& rel) {
  Fd fd;
  if (openBeneath(rootFd, rel, O_RDONLY | O_NONBLOCK, 0, fd) != 0) return "";
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxGitConfigBytes) return "";
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t n = readFull(fd.get(), text.data(), text.size());
  text.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return text;
}

/// The directory a credential helper's relative --file is taken from: the
/// work tree above the `.git` directory of `config`, or a bare repository's own.
std::string repoTop(std::string_view config) {
  std::string_view dir = parentPath(config);
  for (std::string_view d = dir; !d.empty(); d = parentPath(d))
    if (baseName(d) == ".git") return std::string(parentPath(d));
  return std::string(dir);
}

/// Sets each entry's GitFileKind: by path (gitFileKind), bare repositories'
/// files (a directory holding HEAD and objects/) and files a config includes
/// (include.path, includeIf.*.path, followed through further includes).
/// Removes the files that `credential.helper = store --file=PATH` names,
/// recording them as KeptOutReason::GitCredentialStore.
void classifyGitFiles(int rootFd, const std::string& root, std::vector<WalkEntry>& entries, SnapshotResult& res) {
  std::unordered_map<std::string_view, size_t> index;
  for (size_t i = 0; i < entries.size(); ++i) index.emplace(entries[i].path, i);
  auto find = [&](const std::string& rel, EntryType type) -> WalkEntry* {
    auto it = index.find(rel);
    return it != index.end() && entries[it->second].type == type ? &entries[it->second] : nullptr;
  };
  std::vector<size_t> configs;  // to read for includes and stores
  for (auto& e : entries)
    if (e.type == EntryType::File) e.git = gitFileKind(e.path);
  // "" is the root: a bare repository as the tree itself (a linked
  // worktree's common directory, see linked_git_dir.h).
  auto in = [](std::string_view dir, std::string_view name) {
    return dir.empty() ? std::string(name) : fmt::format("{}/{}", dir, name);
  };
  auto isRepo = [&](std::string_view dir) {
    return find(in(dir, "HEAD"), EntryType::File) && find(in(dir, "objects"), EntryType::Dir);
  };
  std::vector<std::string> repos;
  if (isRepo("")) repos.emplace_back();
  for (const auto& e : entries)
    if (e.type == EntryType::Dir && isRepo(e.path)) repos.push_back(e.path);
  for (const auto& repo : repos) {
    for (const char* name : {"config", "config.worktree"})
      if (WalkEntry* c = find(in(repo, name), EntryType::File)) c->git = GitFileKind::RepoConfig;
    if (WalkEntry* f = find(in(repo, "FETCH_HEAD"), EntryType::File)) f->git = GitFileKind::UrlsOnly;
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    WalkEntry& e = entries[i];
    if (e.git == GitFileKind::Config || e.git == GitFileKind::RepoConfig) configs.push_back(i);
    if (e.type == EntryType::File && e.git == GitFileKind::None) {
      // A bare repository's reflogs: DIR/logs/... with DIR/HEAD and DIR/objects/.
      for (std::string_view d = parentPath(e.path); !d.empty(); d = parentPath(d)) {
        if (baseName(d) != "logs") continue;
        if (isRepo(parentPath(d))) {
          e.git = GitFileKind::UrlsOnly;
          break;
        }
      }
    }
  }
  std::set<std::string> stores;
  std::set<size_t> read;
  while (!configs.empty()) {
    size_t i = configs.back();
    configs.pop_back();
    if (!read.insert(i).second) continue;
    std::string rel = entries[i].path;
    GitConfigRefs refs = gitConfigRefs(readSmall(rootFd, rel));
    for (const auto& inc : refs.includes) {
      std::string target = resolveGitPath(inc, parentPath(rel), root);
      if (WalkEntry* t = target.empty() ? nullptr : find(target, EntryType::File)) {
        if (t->git == GitFileKind::None) t->git = GitFileKind::Config;
        configs.push_back(static_cast<size_t>(t - entries.data()));
      }
    }
    for (const auto& s : refs.stores)
      for (const std::string& base : {repoTop(rel), std::string(parentPath(rel))})
        if (std::string target = resolveGitPath(s, base, root); !target.empty() && find(target, EntryType::File))
          stores.insert(target);
  }
  if (stores.empty()) return;
  std::erase_if(entries, [&](const WalkEntry& e) {
    bool out = e.type == EntryType::File && stores.count(e.path);
    if (out) res.excluded.push_back({e.path, KeptOutReason::GitCredentialStore});
    return out;
  });
}

/// Removes the hooks directories of repositories, with everything in them
/// (git would run them when the agent commits in the VM; the user's hooks
/// are the user's, and the review holds back any the agent writes):
/// `hooks` in a `.git` or `NAME.git` directory, or in a directory holding
/// HEAD that is a bare repository (objects/; the root too) or lies below
/// `.git` (.git/modules/M). Each is recorded as KeptOutReason::GitHooks.
void keepOutGitHooks(std::vector<WalkEntry>& entries, SnapshotResult& res) {
  std::set<std::string> heads, objects;
  for (const auto& e : entries) {
    if (e.type == EntryType::File && baseName(e.path) == "HEAD") heads.emplace(parentPath(e.path));
    if (e.type == EntryType::Dir && baseName(e.path) == "objects") objects.emplace(parentPath(e.path));
  }
  auto belowDotGit = [](std::string_view p) {
    for (std::string_view d = p; !d.empty(); d = parentPath(d))
      if (baseName(d) == ".git") return true;
    return false;
  };
  std::set<std::string, std::less<>> hooks;
  for (const auto& e : entries) {
    if (e.type != EntryType::Dir || baseName(e.path) != "hooks") continue;
    std::string repo(parentPath(e.path));  // "": the root is the repository
    if (baseName(repo).ends_with(".git") ||
        (heads.contains(repo) && (objects.contains(repo) || belowDotGit(repo))))
      hooks.insert(e.path);
  }
  if (hooks.empty()) return;
  std::erase_if(entries, [&](const WalkEntry& e) {
    for (std::string_view d = e.path; !d.empty(); d = parentPath(d))
      if (hooks.contains(d)) return true;
    return false;
  });
  // Not below another kept-out one: a directory stands for its contents.
  for (const auto& h : hooks) {
    bool nested = false;
    for (std::string_view d = parentPath(h); !d.empty() && !nested; d = parentPath(d)) nested = hooks.contains(d);
    if (!nested) res.excluded.push_back({h, KeptOutReason::GitHooks});
  }
}

ManifestEntry recordFor(const WalkEntry& w) {
  ManifestEntry m;
  m.type = w.type;
  m.mode = w.st.st_mode & 07777;
  m.size = w.type == EntryType::File ? static_cast<uint64_t>(w.st.st_size) : 0;
  m.mtimeNs = static_cast<int64_t>(w.st.st_mtim.tv_sec) * 1000000000 + w.st.st_mtim.tv_nsec;
  return m;
}

// Copies (destFd valid) or hashes (destFd -1) every file entry with a pool of threads.
Result<> processFiles(int rootFd, int destFd, Mode mode, std::vector<WalkEntry>& entries,
                      std::vector<ManifestEntry>& records, std::vector<char>& vanished, const SnapshotOptions& opt,
                      SnapshotResult& res) {
  std::vector<size_t> files;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].type == EntryType::File) files.push_back(i);
  unsigned threads = opt.threads ? opt.threads : std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(files.size(), 1)));
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> reflinked{0}, copied{0}, bytes{0}, done{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::optional<Error> firstError;
  std::vector<std::string> warnings;
  std::vector<KeptOut> privateKeys;
  std::vector<std::string> stripped;
  auto worker = [&] {
    while (!stop) {
      size_t k = next++;
      if (k >= files.size()) return;
      size_t idx = files[k];
      const std::string& rel = entries[idx].path;
      auto record = [&](Error e) {
        std::lock_guard lock(mu);
        if (!firstError) firstError = std::move(e);
        stop = true;
      };
      if (int sig = interruptSignal(); sig != 0)  // Ctrl-C (common/interrupt.h): the copy stops here
        return record(interruptedError(sig, "during the snapshot"));
      Fd src;
      if (int e = openBeneath(rootFd, rel, O_RDONLY | O_NONBLOCK, 0, src)) {
        if (e == ENOENT) {
          std::lock_guard lock(mu);
          warnings.push_back(fmt::format("skipped '{}': it vanished during the snapshot", displayPath(rel)));
          vanished[idx] = 1;
          continue;
        }
        return record(Error{fmt::format("cannot read '{}': {}; fix its permissions, or leave it out with --exclude {}",
                                        displayPath(rel), errnoText(e), displayPath(rel)),
                            exit_code::kHostNotReady});
      }
      struct stat st {};
      if (::fstat(src.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return record(Error{fmt::format("'{}' changed type during the snapshot; retry", displayPath(rel))});
      std::string digest;
      if (mode == Mode::FindAll) {
        bool key = false, creds = false;
        if (auto r = inspectContent(src.get(), rel, st.st_size, entries[idx].git, key, creds); !r) return record(r.error());
        std::lock_guard lock(mu);
        if (key) privateKeys.push_back({rel, KeptOutReason::PrivateKey});
        else if (creds) stripped.push_back(rel);
        continue;
      }
      if (destFd >= 0) {
        Fd dst(::openat(destFd, rel.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!dst) return record(Error{fmt::format("cannot create the snapshot copy of '{}': {}", displayPath(rel), errnoText(errno))});
        bool ref = false;
        // Small files are read for the digest anyway, so one write beats a clone.
        bool tryClone = opt.reflink && st.st_size >= kMinCloneBytes;
        PrivateKeyScanner scan;
        auto h = copyAndHash(src.get(), dst.get(), tryClone, ref, rel, [&](std::string_view c) { scan.feed(c); });
        if (!h) return record(h.error());
        if (scan.found()) {  // never in the snapshot: the copy goes before the guest can see it
          dst.reset();
          if (::unlinkat(destFd, rel.c_str(), 0) != 0)
            return record(Error{fmt::format("cannot remove the snapshot copy of '{}' (it holds a private key): {}",
                                            displayPath(rel), errnoText(errno))});
          std::lock_guard lock(mu);
          privateKeys.push_back({rel, KeptOutReason::PrivateKey});
          vanished[idx] = 1;
          continue;
        }
        if (entries[idx].git != GitFileKind::None) {
          auto changed = stripCopiedGitFile(dst.get(), rel, st.st_size, entries[idx].git);
          if (!changed) return record(changed.error());
          if (*changed) {
            std::lock_guard lock(mu);
            stripped.push_back(rel);
          }
        }
        digest = std::move(*h);
        (ref ? reflinked : copied)++;
        ::fchmod(dst.get(), st.st_mode & 0777);
        timespec times[2] = {st.st_atim, st.st_mtim};
        ::futimens(dst.get(), times);
      } else {
        auto h = hashFd(src.get(), rel);
        if (!h) return record(h.error());
        digest = std::move(*h);
      }
      ManifestEntry& m = records[idx];
      m.sha256 = std::move(digest);
      m.size = static_cast<uint64_t>(st.st_size);
      m.mode = st.st_mode & 07777;
      m.mtimeNs = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      bytes += m.size;
      uint64_t d = ++done;
      if (opt.progress && (d % 1000 == 0 || d == files.size())) {
        std::lock_guard lock(mu);
        opt.progress(SnapshotProgress{d, files.size(), bytes.load()});
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (firstError) return std::unexpected(*firstError);
  res.reflinked = reflinked;
  res.copied = copied;
  res.bytes = bytes;
  res.warnings.insert(res.warnings.end(), warnings.begin(), warnings.end());
  std::sort(privateKeys.begin(), privateKeys.end(), [](const KeptOut& a, const KeptOut& b) { return a.path < b.path; });
  res.excluded.insert(res.excluded.end(), privateKeys.begin(), privateKeys.end());
  std::sort(stripped.begin(), stripped.end());
  res.gitCredentialsStripped = std::move(stripped);
  return {};
}

Result<SnapshotResult> run(const std::string& root, const std::string* destDir, Mode mode, const IgnoreRules& rules,
                           const SnapshotOptions& opt) {
  Fd rootFd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!rootFd) return fail("cannot open workspace {}: {}", root, errnoText(errno));
  SnapshotResult res;
  KeptOutInodes kept;
  auto entries = walk(rootFd.get(), rules, res, kept);
  if (!entries) return std::unexpected(entries.error());
  if (mode != Mode::Scan) {
    classifyGitFiles(rootFd.get(), root, *entries, res);
    keepOutGitHooks(*entries, res);
    keepOutHardLinks(rootFd.get(), *entries, kept, res);
  }
  if (mode == Mode::FindByNames || mode == Mode::FindAll) {
    if (mode == Mode::FindAll) {
      std::vector<ManifestEntry> unused(entries->size());
      std::vector<char> vanished(entries->size(), 0);
      if (auto r = processFiles(rootFd.get(), -1, mode, *entries, unused, vanished, opt, res); !r)
        return std::unexpected(r.error());
    }
    return res;
  }
  std::vector<ManifestEntry> records;
  records.reserve(entries->size());
  for (const auto& e : *entries) records.push_back(recordFor(e));
  Fd destFd;
  if (destDir) {
    if (::mkdir(destDir->c_str(), 0700) != 0)
      return failWith(errno == EEXIST ? exit_code::kUsage : exit_code::kHostNotReady,
                      "cannot create snapshot directory {}: {}; choose a new directory", *destDir, errnoText(errno));
    destFd.reset(::open(destDir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!destFd) return fail("cannot open snapshot directory {}: {}", *destDir, errnoText(errno));
    for (size_t i = 0; i < entries->size(); ++i) {
      const WalkEntry& w = (*entries)[i];
      if (w.type == EntryType::Dir) {
        if (::mkdirat(destFd.get(), w.path.c_str(), 0700) != 0)
          return fail("cannot create '{}' in the snapshot: {}", displayPath(w.path), errnoText(errno));
      } else if (w.type == EntryType::Symlink) {
        char buf[4097];
        Fd lnk;
        if (int e = openBeneath(rootFd.get(), w.path, O_PATH, 0, lnk))
          return fail("cannot read symlink '{}': {}", displayPath(w.path), errnoText(e));
        ssize_t n = ::readlinkat(lnk.get(), "", buf, sizeof buf - 1);
        if (n < 0) return fail("cannot read symlink '{}': {}", displayPath(w.path), errnoText(errno));
        records[i].target.assign(buf, static_cast<size_t>(n));
        if (::symlinkat(records[i].target.c_str(), destFd.get(), w.path.c_str()) != 0)
          return fail("cannot create symlink '{}' in the snapshot: {}", displayPath(w.path), errnoText(errno));
      }
    }
  } else {
    for (size_t i = 0; i < entries->size(); ++i) {
      const WalkEntry& w = (*entries)[i];
      if (w.type != EntryType::Symlink) continue;
      auto st = inspectBeneath(rootFd.get(), w.path, false);
      if (!st) return std::unexpected(st.error());
      records[i].target = st->target;
    }
  }
  std::vector<char> vanished(entries->size(), 0);
  if (auto r = processFiles(rootFd.get(), destFd.get(), mode, *entries, records, vanished, opt, res); !r)
    return std::unexpected(r.error());
  if (destDir) {
    // Directory modes last, deepest first, so read-only directories do not block the copy.
    for (size_t i = entries->size(); i-- > 0;) {
      const WalkEntry& w = (*entries)[i];
      if (w.type != EntryType::Dir) continue;
      Fd d(::openat(destFd.get(), w.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!d) continue;
      ::fchmod(d.get(), w.st.st_mode & 0777);
      timespec times[2] = {w.st.st_atim, w.st.st_mtim};
      ::futimens(d.get(), times);
    }
    // The root too: the guest's /workspace shows the project's own mode.
    struct stat rootSt {};
    if (::fstat(rootFd.get(), &rootSt) == 0) ::fchmod(destFd.get(), rootSt.st_mode & 0777);
  }
  for (size_t i = 0; i < entries->size(); ++i) {
    if (vanished[i]) continue;
    res.manifest.add(std::move((*entries)[i].path), std::move(records[i]));
  }
  return res;
}

}  // namespace

Result<SnapshotResult> takeSnapshot(const std::string& workspace, const std::string& destDir, const IgnoreRules& rules,
                                    const SnapshotOptions& options) {
  bool existed = ::access(destDir.c_str(), F_OK) == 0;
  auto res = run(workspace, &destDir, Mode::Copy, rules, options);
  if (!res && !existed) (void)removeTree(destDir);  // no half-made copy left behind
  return res;
}

Result<SnapshotResult> scanTree(const std::string& root, const IgnoreRules& rules, const SnapshotOptions& options) {
  return run(root, nullptr, Mode::Scan, rules, options);
}

Result<SnapshotResult> findKeptOut(const std::string& workspace, const IgnoreRules& rules, bool readFiles,
                                   const SnapshotOptions& options) {
  return run(workspace, nullptr, readFiles ? Mode::FindAll : Mode::FindByNames, rules, options);
}

const char* keptOutReasonText(KeptOutReason r) {
  switch (r) {
    case KeptOutReason::SecretName: return "secret name";
    case KeptOutReason::AirlockConfig: return "airlock config file";
    case KeptOutReason::Ignored: return "ignored (.airlockignore, --exclude)";
    case KeptOutReason::HardLink: return "hard link to a kept-out file";
    case KeptOutReason::PrivateKey: return "private key";
    case KeptOutReason::GitCredentialStore: return "git credential store file";
    case KeptOutReason::GitHooks: return "git hooks directory";
  }
  return "kept out";
}

const char* keptOutReasonKey(KeptOutReason r) {
  switch (r) {
    case KeptOutReason::SecretName: return "secret_name";
    case KeptOutReason::AirlockConfig: return "airlock_config";
    case KeptOutReason::Ignored: return "ignored";
    case KeptOutReason::HardLink: return "hard_link";
    case KeptOutReason::PrivateKey: return "private_key";
    case KeptOutReason::GitCredentialStore: return "git_credential_store";
    case KeptOutReason::GitHooks: return "git_hooks";
  }
  return "kept_out";
}

std::string keptOutSummary(const SnapshotResult& res) {
  struct Phrase {
    KeptOutReason reason;
    const char* one;
    const char* many;
  };
  static constexpr Phrase kPhrases[] = {
      {KeptOutReason::SecretName, "secret name", "secret names"},
      {KeptOutReason::PrivateKey, "private key", "private keys"},
      {KeptOutReason::HardLink, "hard link to a kept-out file", "hard links to kept-out files"},
      {KeptOutReason::GitCredentialStore, "git credential store file", "git credential store files"},
      {KeptOutReason::GitHooks, "git hooks directory", "git hooks directories"},
      {KeptOutReason::AirlockConfig, "airlock config file", "airlock config files"},
      {KeptOutReason::Ignored, "ignored (.airlockignore, --exclude)", "ignored (.airlockignore, --exclude)"},
  };
  std::vector<std::string> parts;
  for (const Phrase& p : kPhrases) {
    auto n = std::count_if(res.excluded.begin(), res.excluded.end(),
                           [&](const KeptOut& k) { return k.reason == p.reason; });
    if (n > 0) parts.push_back(fmt::format("{} {}", n, n == 1 ? p.one : p.many));
  }
  std::string out;
  if (!res.excluded.empty())
    out = fmt::format("{} path{} kept out of the snapshot: {}", res.excluded.size(),
                      res.excluded.size() == 1 ? "" : "s", fmt::join(parts, ", "));
  if (!res.gitCredentialsStripped.empty())
    out += fmt::format("{}credentials and commands removed from {} git config file{} in the snapshot", out.empty() ? "" : "; ",
                       res.gitCredentialsStripped.size(), res.gitCredentialsStripped.size() == 1 ? "" : "s");
  return out;
}

}  // namespace airlock::workspace
