#include "workspace/flush.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "workspace/held_back.h"
#include "workspace/relpath.h"
#include "workspace/safe_fs.h"

namespace airlock::workspace {
namespace {

constexpr std::string_view kJournalHeader = "airlock-flush-journal 1";
constexpr const char* kGitRefused = "git metadata (.git) is never written or deleted by a flush";

/// One path transition.
struct Step {
  size_t id = 0;
  std::string path;
  Side pre, post;
  std::string staged;  ///< content of `post` when it is a file
  size_t item = 0;     ///< index into the accepted list (flush only)
};

enum class Outcome { Ok, Conflict, IoError };
struct StepResult {
  Outcome outcome = Outcome::Ok;
  std::string message;
};
StepResult conflict(std::string m) { return {Outcome::Conflict, std::move(m)}; }
StepResult ioError(std::string m) { return {Outcome::IoError, std::move(m)}; }

bool matches(const Side& live, const Side& want) {
  if (live.exists != want.exists) return false;
  if (!live.exists) return true;
  if (live.type != want.type) return false;
  switch (want.type) {
    case EntryType::File: return live.sha256 == want.sha256 && (live.mode & 0777) == (want.mode & 0777);
    case EntryType::Symlink: return live.target == want.target;
    case EntryType::Dir: return (live.mode & 0777) == (want.mode & 0777);
  }
  return false;
}

std::string enc(std::string_view s) { return s.empty() ? "%" : percentEncode(s); }
Result<std::string> dec(std::string_view s) { return s == "%" ? Result<std::string>(std::string()) : percentDecode(s); }

std::string sideText(const Side& s) {
  char t = s.exists ? static_cast<char>(s.type) : '-';
  return fmt::format("{} {:o} {} {}", t, s.mode, enc(s.sha256), enc(s.target));
}

/// `path` made absolute against the current directory, so the journal and the
/// in-progress pointer still work from any directory.
std::string absolute(const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  char buf[PATH_MAX];
  if (!::getcwd(buf, sizeof buf)) return path;
  return std::string(buf) + "/" + path;
}

std::string workspaceKey(const std::string& workspace) {
  char buf[PATH_MAX];
  std::string real = ::realpath(workspace.c_str(), buf) ? std::string(buf) : workspace;
  return sha256Hex(real).substr(0, 32);
}

/// Append-only, fsynced record of one flush.
class Journal {
 public:
  Result<> create(const std::string& file, const std::string& header) {
    fd_.reset(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600));
    if (!fd_) return fail("cannot create flush journal {}: {}", file, errnoText(errno));
    return append(header);
  }
  Result<> reopen(const std::string& file) {
    fd_.reset(::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    if (!fd_) return fail("cannot open flush journal {}: {}", file, errnoText(errno));
    return {};
  }
  Result<> append(std::string_view text) {
    std::string line(text);
    if (line.empty() || line.back() != '\n') line.push_back('\n');
    if (!writeAll(fd_.get(), line) || ::fdatasync(fd_.get()) != 0)
      return fail("cannot write the flush journal: {}", errnoText(errno));
    return {};
  }

 private:
  Fd fd_;
};

/// The state kept while steps run: where things are, and what was done.
struct Runner {
  int rootFd = -1;
  std::string tmpPrefix;    ///< ".airlock-flush-<id>-"
  std::string backupDir;
  Journal* journal = nullptr;
  const FlushHooks* hooks = nullptr;
  std::vector<std::string> createdDirs;
  std::optional<FileOwner> owner;  ///< FlushContext::owner

  /// Gives the entry `name` of `dir` (a symlink itself, not its target) to
  /// `who`; 0 or an errno value. Nothing to do without an owner.
  static int chownEntry(int dir, const std::string& name, const std::optional<FileOwner>& who) {
    if (!who) return 0;
    return ::fchownat(dir, name.c_str(), who->uid, who->gid, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
  }

  /// Records the directories makeParents() created and gives them to the owner.
  StepResult recordCreatedDirs(const std::vector<std::string>& made) {
    for (auto& d : made) {
      createdDirs.push_back(d);
      if (auto r = journal->append("mkdir " + enc(d)); !r) return ioError(r.error().message);
      Fd parent;
      int e = openParentRw(d, parent);
      if (e == 0) e = chownEntry(parent.get(), std::string(baseName(d)), owner);
      if (e != 0) return ioError(fmt::format("cannot give directory '{}' to its owner: {}", displayPath(d), errnoText(e)));
    }
    return {};
  }

  /// Who the new inode written for `name` in `dir` belongs to: the entry it
  /// replaces keeps its owner; a new entry gets `owner`.
  std::optional<FileOwner> ownerFor(int dir, const std::string& name) const {
    if (!owner) return std::nullopt;
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return FileOwner{st.st_uid, st.st_gid};
    return owner;
  }

  std::string tmpName(size_t id) const { return tmpPrefix + std::to_string(id); }
  std::string backupPath(size_t id) const { return backupDir + "/" + std::to_string(id); }

  int openParentRw(const std::string& path, Fd& dir) const {
    return openBeneath(rootFd, parentPath(path), O_RDONLY | O_DIRECTORY, 0, dir);
  }

  void removeTemp(const std::string& path, size_t id) const {
    Fd dir;
    if (openParentRw(path, dir) == 0) ::unlinkat(dir.get(), tmpName(id).c_str(), 0);
  }

  /// Copies the live file at `path` aside; fails with kConflict when it no
  /// longer has `from`'s content (changed on the host during the flush).
  Result<> backup(const std::string& path, size_t id, const Side& from) const {
    Fd src;
    if (int e = openBeneath(rootFd, path, O_RDONLY | O_NONBLOCK, 0, src))
      return fail("cannot read '{}' to back it up: {}", displayPath(path), errnoText(e));
    std::string file = backupPath(id);
    ::unlink(file.c_str());
    Fd dst(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!dst) return fail("cannot create backup {}: {}", file, errnoText(errno));
    bool ref = false;
    auto h = copyAndHash(src.get(), dst.get(), true, ref, path);
    if (!h) return std::unexpected(h.error());
    if (::fsync(dst.get()) != 0) return fail("cannot write backup {}: {}", file, errnoText(errno));
    if (*h != from.sha256)  // the caller reports the conflict with the path
      return failWith(exit_code::kConflict, "'{}' changed on the host during the flush", displayPath(path));
    return {};
  }

  /// Writes `content` (a file whose digest must be want.sha256) to the temp name next to `path`.
  StepResult writeTemp(const std::string& path, size_t id, const Side& want, const std::string& content,
                       bool injectFaults) {
    std::vector<std::string> made;
    int err = makeParents(rootFd, path, made);
    if (auto r = recordCreatedDirs(made); r.outcome != Outcome::Ok) return r;
    if (err == ELOOP || err == ENOTDIR || err == EXDEV)
      return conflict(fmt::format("a parent of '{}' is a symlink or not a directory on the host; not written",
                                  displayPath(path)));
    if (err != 0)
      return ioError(fmt::format("cannot create the parent directories of '{}': {}", displayPath(path), errnoText(err)));
    Fd dir;
    if (int e = openParentRw(path, dir))
      return conflict(fmt::format("cannot open the directory of '{}' without following symlinks: {}",
                                  displayPath(path), errnoText(e)));
    std::string tmp = tmpName(id);
    ::unlinkat(dir.get(), tmp.c_str(), 0);
    const std::optional<FileOwner> who = ownerFor(dir.get(), std::string(baseName(path)));
    if (want.type == EntryType::Symlink) {
      if (::symlinkat(want.target.c_str(), dir.get(), tmp.c_str()) != 0)
        return ioError(fmt::format("cannot create symlink '{}': {}", displayPath(path), errnoText(errno)));
      if (int e = chownEntry(dir.get(), tmp, who)) {
        ::unlinkat(dir.get(), tmp.c_str(), 0);
        return ioError(fmt::format("cannot give symlink '{}' to its owner: {}", displayPath(path), errnoText(e)));
      }
      return {};
    }
    Fd src(::open(content.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!src) return conflict(fmt::format("the staged content of '{}' is missing: {}", displayPath(path), errnoText(errno)));
    Fd out(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) return ioError(fmt::format("cannot create a temp file next to '{}': {}", displayPath(path), errnoText(errno)));
    auto cleanup = [&] { ::unlinkat(dir.get(), tmp.c_str(), 0); };
    if (injectFaults && hooks && hooks->writeFault) {
      if (int e = hooks->writeFault(path)) {
        cleanup();
        return ioError(fmt::format("cannot write '{}': {}", displayPath(path), errnoText(e)));
      }
    }
    bool ref = false;
    auto h = copyAndHash(src.get(), out.get(), true, ref, path);
    if (!h) {
      cleanup();
      return ioError(h.error().message);
    }
    if (*h != want.sha256) {
      cleanup();
      return conflict(fmt::format("the staged content of '{}' changed after review; not written", displayPath(path)));
    }
    if ((who && ::fchown(out.get(), who->uid, who->gid) != 0) || ::fchmod(out.get(), want.mode & 0777) != 0 ||
        ::fsync(out.get()) != 0) {
      int e = errno;
      cleanup();
      return ioError(fmt::format("cannot write '{}': {}", displayPath(path), errnoText(e)));
    }
    return {};
  }

  /// A mode change of the hard-linked file `s.path` (open as `src`, `st` its
  /// fstat) without touching its inode: its content is copied to the temp
  /// name in `dir` with the new mode and timestamps, checked against
  /// `to.sha256`, and renamed over the name.
  StepResult replaceWithMode(int dir, const Step& s, int src, const struct stat& st, const Side& to) const {
    std::string tmp = tmpName(s.id);
    ::unlinkat(dir, tmp.c_str(), 0);
    Fd out(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out)
      return ioError(fmt::format("cannot create a temp file next to '{}': {}", displayPath(s.path), errnoText(errno)));
    auto cleanup = [&] { ::unlinkat(dir, tmp.c_str(), 0); };
    bool ref = false;
    auto h = copyAndHash(src, out.get(), true, ref, s.path);
    if (!h) {
      cleanup();
      return ioError(h.error().message);
    }
    if (*h != to.sha256) {
      cleanup();
      return conflict(fmt::format("'{}' changed on the host during the flush; it is not overwritten",
                                  displayPath(s.path)));
    }
    timespec times[2] = {st.st_atim, st.st_mtim};
    if ((owner && ::fchown(out.get(), st.st_uid, st.st_gid) != 0) || ::fchmod(out.get(), to.mode & 0777) != 0 ||
        ::futimens(out.get(), times) != 0 || ::fsync(out.get()) != 0) {
      int e = errno;
      cleanup();
      return ioError(fmt::format("cannot write '{}': {}", displayPath(s.path), errnoText(e)));
    }
    std::string name(baseName(s.path));
    if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
      int e = errno;
      cleanup();
      return ioError(fmt::format("cannot move the new '{}' into place: {}", displayPath(s.path), errnoText(e)));
    }
    return {};
  }

  /// Moves `path` from state `from` to state `to`. `content` holds the bytes
  /// of `to` when it is a file; when `from` is a file its bytes are backed up
  /// first if `keepBackup`.
  StepResult apply(const Step& s, const Side& from, const Side& to, const std::string& content, bool keepBackup,
                   bool injectFaults) {
    if (isGitMetadataPath(s.path)) return conflict(fmt::format("'{}': {}", displayPath(s.path), kGitRefused));
    auto live = liveSide(rootFd, s.path);
    if (!live) return conflict(live.error().message);
    if (!matches(*live, from)) {
      if (matches(*live, to)) return {};
      return conflict(fmt::format("'{}' was changed on the host since the snapshot; it is not overwritten",
                                  displayPath(s.path)));
    }
    bool chmodOnly = from.exists && to.exists && from.type == to.type && from.type != EntryType::Symlink &&
                     from.sha256 == to.sha256;
    if (keepBackup && from.exists && from.type == EntryType::File && !chmodOnly) {
      if (auto r = backup(s.path, s.id, from); !r) {
        if (r.error().code == exit_code::kConflict)
          return conflict(fmt::format("'{}' changed on the host during the flush; it is not overwritten",
                                      displayPath(s.path)));
        return ioError(r.error().message);
      }
      if (auto r = journal->append(fmt::format("backup {}", s.id)); !r) return ioError(r.error().message);
    }
    bool needsTemp = to.exists && (to.type == EntryType::File || to.type == EntryType::Symlink) && !chmodOnly;
    if (needsTemp) {
      if (auto r = writeTemp(s.path, s.id, to, content, injectFaults); r.outcome != Outcome::Ok) return r;
    } else if (to.exists && to.type == EntryType::Dir && !from.exists) {
      std::vector<std::string> made;
      int e = makeParents(rootFd, s.path, made);
      if (auto r = recordCreatedDirs(made); r.outcome != Outcome::Ok) return r;
      if (e != 0)
        return conflict(fmt::format("cannot create the parents of '{}': {}", displayPath(s.path), errnoText(e)));
    }
    if (auto r = journal->append(fmt::format("begin {}", s.id)); !r) return ioError(r.error().message);
    Fd dir;
    if (int e = openParentRw(s.path, dir))
      return conflict(fmt::format("cannot open the directory of '{}' without following symlinks: {}",
                                  displayPath(s.path), errnoText(e)));
    std::string name(baseName(s.path));
    if (chmodOnly) {
      Fd f;
      int flags = to.type == EntryType::Dir ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK;
      if (int e = openBeneath(rootFd, s.path, flags, 0, f))
        return conflict(fmt::format("cannot open '{}': {}", displayPath(s.path), errnoText(e)));
      uint32_t mode = to.type == EntryType::Dir ? (to.mode & 0777) | 0700 : to.mode & 0777;
      struct stat st {};
      if (::fstat(f.get(), &st) != 0)
        return ioError(fmt::format("cannot inspect '{}': {}", displayPath(s.path), errnoText(errno)));
      // Another name shares this inode (maybe outside the workspace): a chmod
      // would change it too, so this name gets a new inode instead.
      if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
        if (auto r = replaceWithMode(dir.get(), s, f.get(), st, to); r.outcome != Outcome::Ok) return r;
      } else if (::fchmod(f.get(), mode) != 0) {
        return ioError(fmt::format("cannot change the mode of '{}': {}", displayPath(s.path), errnoText(errno)));
      }
    } else {
      if (from.exists && from.type == EntryType::Dir) {
        if (::unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0) {
          if (errno == ENOTEMPTY || errno == EEXIST)
            return conflict(fmt::format("directory '{}' holds files that are not in the baseline; it is kept",
                                        displayPath(s.path)));
          return ioError(fmt::format("cannot remove directory '{}': {}", displayPath(s.path), errnoText(errno)));
        }
      } else if (from.exists && (!to.exists || to.type == EntryType::Dir)) {
        if (::unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT)
          return ioError(fmt::format("cannot remove '{}': {}", displayPath(s.path), errnoText(errno)));
      }
      if (needsTemp) {
        if (::renameat(dir.get(), tmpName(s.id).c_str(), dir.get(), name.c_str()) != 0)
          return ioError(fmt::format("cannot move the new '{}' into place: {}", displayPath(s.path), errnoText(errno)));
      } else if (to.exists && to.type == EntryType::Dir) {
        bool created = ::mkdirat(dir.get(), name.c_str(), (to.mode & 0777) | 0700) == 0;
        if (!created && errno != EEXIST)
          return ioError(fmt::format("cannot create directory '{}': {}", displayPath(s.path), errnoText(errno)));
        if (created) {
          if (int e = chownEntry(dir.get(), name, owner))
            return ioError(fmt::format("cannot give directory '{}' to its owner: {}", displayPath(s.path), errnoText(e)));
        }
        Fd d;
        if (openBeneath(rootFd, s.path, O_RDONLY | O_DIRECTORY, 0, d) == 0) ::fchmod(d.get(), (to.mode & 0777) | 0700);
      }
    }
    if (::fsync(dir.get()) != 0 && errno != EINVAL)
      return ioError(fmt::format("cannot sync the directory of '{}': {}", displayPath(s.path), errnoText(errno)));
    return {};
  }
};

Side sanitized(const Side& s) {
  Side out = s;
  if (out.exists) out.mode = landingMode(s);  // what the review showed
  return out;
}

std::vector<Step> plan(const std::vector<const DiffItem*>& items) {
  std::vector<Step> steps;
  for (size_t i = 0; i < items.size(); ++i) {
    const DiffItem& it = *items[i];
    Side pre = it.base, post = sanitized(it.agent);
    if (pre.exists && pre.type == EntryType::Symlink) pre.mode = 0;
    bool dirSwap = pre.exists && post.exists && pre.type != post.type &&
                   (pre.type == EntryType::Dir || post.type == EntryType::Dir);
    if (dirSwap) {
      steps.push_back(Step{0, it.path, pre, Side{}, "", i});
      steps.push_back(Step{0, it.path, Side{}, post, it.staged, i});
    } else {
      steps.push_back(Step{0, it.path, pre, post, it.staged, i});
    }
  }
  // Removals deepest first, then directory creations shallowest first, then the rest.
  auto phase = [](const Step& s) { return !s.post.exists ? 0 : s.post.type == EntryType::Dir && !s.pre.exists ? 1 : 2; };
  std::stable_sort(steps.begin(), steps.end(), [&](const Step& a, const Step& b) {
    int pa = phase(a), pb = phase(b);
    if (pa != pb) return pa < pb;
    if (pa == 0) return pathDepth(a.path) > pathDepth(b.path);
    if (pa == 1) return pathDepth(a.path) < pathDepth(b.path);
    return false;
  });
  for (size_t i = 0; i < steps.size(); ++i) steps[i].id = i;
  return steps;
}

struct JournalState {
  std::string id;
  std::string workspace;
  std::vector<Step> steps;
  std::set<size_t> begun, done, skipped, backedUp;
  std::vector<std::string> createdDirs;
  bool planned = false, finished = false, rollingBack = false;
};

Result<JournalState> readJournal(const std::string& file) {
  auto text = readFile(file, size_t{1} << 30);
  if (!text) return std::unexpected(text.error());
  JournalState st;
  size_t pos = 0;
  bool first = true;
  auto bad = [&] { return fail("flush journal {} is corrupt; inspect it and remove it to continue", file); };
  while (pos < text->size()) {
    size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) break;  // a torn final record: ignored
    std::string_view line(text->data() + pos, nl - pos);
    pos = nl + 1;
    if (first) {
      if (line != kJournalHeader) return bad();
      first = false;
      continue;
    }
    std::vector<std::string_view> tok;
    size_t s = 0;
    while (s <= line.size()) {
      size_t sp = line.find(' ', s);
      if (sp == std::string_view::npos) sp = line.size();
      tok.push_back(line.substr(s, sp - s));
      s = sp + 1;
    }
    auto num = [&](std::string_view t) { return static_cast<size_t>(std::strtoull(std::string(t).c_str(), nullptr, 10)); };
    if (tok[0] == "id" && tok.size() == 2) st.id = tok[1];
    else if (tok[0] == "workspace" && tok.size() == 2) {
      auto w = dec(tok[1]);
      if (!w) return bad();
      st.workspace = *w;
    } else if (tok[0] == "step" && tok.size() == 12) {
      Step step;
      step.id = num(tok[1]);
      auto p = dec(tok[2]);
      auto staged = dec(tok[11]);
      if (!p || !staged || step.id != st.steps.size()) return bad();
      step.path = *p;
      step.staged = *staged;
      Side* sides[2] = {&step.pre, &step.post};
      for (int k = 0; k < 2; ++k) {
        Side& sd = *sides[k];
        std::string_view t = tok[3 + 4 * k];
        sd.exists = t != "-";
        if (sd.exists) {
          if (t != "f" && t != "d" && t != "l") return bad();
          sd.type = static_cast<EntryType>(t[0]);
        }
        sd.mode = static_cast<uint32_t>(std::strtoul(std::string(tok[4 + 4 * k]).c_str(), nullptr, 8));
        auto sha = dec(tok[5 + 4 * k]);
        auto target = dec(tok[6 + 4 * k]);
        if (!sha || !target) return bad();
        sd.sha256 = *sha;
        sd.target = *target;
      }
      st.steps.push_back(std::move(step));
    } else if (tok[0] == "planned") st.planned = true;
    else if (tok[0] == "mkdir" && tok.size() == 2) {
      auto d = dec(tok[1]);
      if (!d) return bad();
      st.createdDirs.push_back(*d);
    } else if (tok[0] == "backup" && tok.size() == 2) st.backedUp.insert(num(tok[1]));
    else if (tok[0] == "begin" && tok.size() == 2) st.begun.insert(num(tok[1]));
    else if (tok[0] == "done" && tok.size() == 2) st.done.insert(num(tok[1]));
    else if (tok[0] == "skip" && tok.size() == 2) st.skipped.insert(num(tok[1]));
    else if (tok[0] == "rollingback") st.rollingBack = true;
    else if (tok[0] == "committed" || tok[0] == "rolledback") st.finished = true;
    else return bad();
  }
  if (first) return bad();
  return st;
}

/// Undoes every begun step (newest first) and removes temp files and created directories.
void rollBack(Runner& r, const std::vector<Step>& steps, const std::set<size_t>& begun, size_t& undone,
              std::vector<std::string>& notes) {
  (void)r.journal->append("rollingback");  // a crash from here on resumes the rollback
  for (size_t i = steps.size(); i-- > 0;) {
    const Step& s = steps[i];
    r.removeTemp(s.path, s.id);
    if (!begun.count(s.id)) continue;
    auto live = liveSide(r.rootFd, s.path);
    if (live && matches(*live, s.pre)) continue;
    auto res = r.apply(s, s.post, s.pre, r.backupPath(s.id), false, false);
    if (res.outcome == Outcome::Ok) ++undone;
    else notes.push_back(res.message);
  }
  for (size_t i = r.createdDirs.size(); i-- > 0;) {
    Fd dir;
    if (r.openParentRw(r.createdDirs[i], dir) == 0)
      ::unlinkat(dir.get(), std::string(baseName(r.createdDirs[i])).c_str(), AT_REMOVEDIR);
  }
}

struct Paths {
  std::string flushDir, journal, backupDir, pointerDir, pointer, lock;
};

Paths pathsFor(const std::string& sessionDir, const std::string& stateDir, const std::string& workspace) {
  Paths p;
  p.flushDir = sessionDir + "/flush";
  p.journal = p.flushDir + "/journal";
  p.backupDir = p.flushDir + "/backup";
  p.pointerDir = stateDir + "/flush";
  std::string key = workspaceKey(workspace);
  p.pointer = p.pointerDir + "/" + key;
  p.lock = p.pointerDir + "/" + key + ".lock";
  return p;
}

/// The workspace's flush lock, waiting for another session's flush (seconds:
/// a flush writes what was already reviewed and staged).
Result<FileLock> lockWorkspace(const Paths& p, const std::string& workspace, const ProgressFn& waiting) {
  if (auto r = makeDirs(p.pointerDir, 0700); !r) return std::unexpected(r.error());
  return FileLock::acquire(p.lock, "flushing into " + workspace, waiting);
}

void finish(const Paths& p, const std::string& id) {
  ::unlink(p.pointer.c_str());
  ::rename(p.journal.c_str(), (p.flushDir + "/../flush-" + id + ".journal").c_str());
  (void)removeTree(p.flushDir);
}

}  // namespace

Result<FileLock> holdFlushes(const std::string& workspace, const std::string& stateDir, const ProgressFn& waiting) {
  return lockWorkspace(pathsFor("/nonexistent", absolute(stateDir), workspace), workspace, waiting);
}

std::string flushLockPath(const std::string& workspace, const std::string& stateDir) {
  return pathsFor("/nonexistent", absolute(stateDir), workspace).lock;
}

Result<FlushReport> flush(const std::vector<const DiffItem*>& accepted, const FlushContext& ctx) {
  FlushReport report;
  std::vector<const DiffItem*> items;
  for (const DiffItem* it : accepted) {
    bool git = it->gitMetadata || isGitMetadataPath(it->path);
    if (git || it->conflict || it->excluded != IgnoreVerdict::Included || it->kind == ChangeKind::Skipped) {
      report.items.push_back({it->path, FlushItemResult::Status::Conflict,
                              git                               ? kGitRefused
                              : it->conflict                    ? it->conflictReason
                              : it->kind == ChangeKind::Skipped ? "skipped: " + it->skipReason
                                                                : "excluded paths are never flushed"});
      ++report.conflicts;
      continue;
    }
    items.push_back(it);
  }
  const std::string sessionDir = absolute(ctx.sessionDir);
  Paths p = pathsFor(sessionDir, absolute(ctx.stateDir), ctx.workspace);
  auto lock = lockWorkspace(p, ctx.workspace, ctx.waiting);
  if (!lock) return std::unexpected(lock.error());
  if (::access(p.pointer.c_str(), F_OK) == 0)
    return fail("an interrupted flush into {} is pending; run airlock review again to complete or roll it back",
                ctx.workspace);
  Fd root(::open(ctx.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return fail("cannot open workspace {}: {}", ctx.workspace, errnoText(errno));
  (void)removeTree(p.flushDir);
  if (auto r = makeDirs(p.backupDir, 0700); !r) return std::unexpected(r.error());

  std::vector<Step> steps = plan(items);
  for (Step& s : steps) s.staged = absolute(s.staged);
  std::random_device rd;
  std::string id = fmt::format("{:08x}{:08x}", rd(), rd());
  Journal journal;
  std::string header = fmt::format("{}\nid {}\nworkspace {}", kJournalHeader, id, enc(absolute(ctx.workspace)));
  for (const Step& s : steps)
    header += fmt::format("\nstep {} {} {} {} {}", s.id, enc(s.path), sideText(s.pre), sideText(s.post), enc(s.staged));
  header += "\nplanned";
  if (auto r = journal.create(p.journal, header); !r) return std::unexpected(r.error());
  if (auto r = writeFileAtomic(p.pointer, sessionDir + "\n", 0600); !r) return std::unexpected(r.error());

  Runner run{root.get(), ".airlock-flush-" + id + "-", p.backupDir, &journal, &ctx.hooks, {}, ctx.owner};
  std::vector<std::string> itemConflict(items.size());
  std::set<size_t> begun;
  size_t doneCount = 0;
  for (const Step& s : steps) {
    if (!itemConflict[s.item].empty()) continue;  // the item's first step already failed
    begun.insert(s.id);
    StepResult res = run.apply(s, s.pre, s.post, s.staged, true, true);
    if (res.outcome == Outcome::IoError) {
      size_t undone = 0;
      std::vector<std::string> notes;
      rollBack(run, steps, begun, undone, notes);
      (void)journal.append("rolledback");
      finish(p, id);
      std::string extra = notes.empty() ? "" : fmt::format(" (not restored: {})", fmt::join(notes, "; "));
      return fail("flush stopped: {}; every change already written was rolled back, the workspace is as before{}",
                  res.message, extra);
    }
    if (res.outcome == Outcome::Conflict) {
      itemConflict[s.item] = res.message;
      (void)journal.append(fmt::format("skip {}", s.id));
      continue;
    }
    if (auto r = journal.append(fmt::format("done {}", s.id)); !r) return std::unexpected(r.error());
    ++doneCount;
    if (ctx.hooks.afterStep) ctx.hooks.afterStep(doneCount);
  }
  if (auto r = journal.append("committed"); !r) return std::unexpected(r.error());
  finish(p, id);
  for (size_t i = 0; i < items.size(); ++i) {
    bool ok = itemConflict[i].empty();
    report.items.push_back({items[i]->path, ok ? FlushItemResult::Status::Flushed : FlushItemResult::Status::Conflict,
                            itemConflict[i]});
    ok ? ++report.flushed : ++report.conflicts;
  }
  return report;
}

std::optional<FileOwner> workspaceOwnerForFlush(const std::string& workspace, uint32_t euid) {
  struct stat st {};
  if (euid != 0 || ::stat(workspace.c_str(), &st) != 0 || st.st_uid == 0) return std::nullopt;
  return FileOwner{st.st_uid, st.st_gid};
}

Result<RecoveryReport> recoverFlush(const std::string& workspace, const std::string& stateDir, RecoveryMode mode,
                                    std::optional<FileOwner> owner, const ProgressFn& waiting) {
  RecoveryReport report;
  Paths probe = pathsFor("/nonexistent", stateDir, workspace);
  if (::access(probe.pointer.c_str(), F_OK) != 0) return report;
  auto lock = lockWorkspace(probe, workspace, waiting);
  if (!lock) return std::unexpected(lock.error());
  // The pointer was another session's flush in progress, which finished
  // while this one waited: nothing was interrupted.
  if (::access(probe.pointer.c_str(), F_OK) != 0 && errno == ENOENT) return report;
  auto pointer = readFile(probe.pointer, 1 << 16);
  if (!pointer) return std::unexpected(pointer.error());
  std::string sessionDir = *pointer;
  while (!sessionDir.empty() && sessionDir.back() == '\n') sessionDir.pop_back();
  report.found = true;
  report.sessionDir = sessionDir;
  Paths p = pathsFor(sessionDir, stateDir, workspace);
  if (::access(p.journal.c_str(), F_OK) != 0 && errno == ENOENT) {
    // The session (and its journal) was deleted: nothing can be replayed, and
    // a pointer to nowhere must not block every later flush.
    ::unlink(probe.pointer.c_str());
    report.notes.push_back(fmt::format("the journal {} is gone, so the interrupted flush cannot be completed or "
                                       "rolled back; check the workspace by hand",
                                       p.journal));
    return report;
  }
  auto st = readJournal(p.journal);
  if (!st) return std::unexpected(st.error());
  if (st->finished) {
    finish(p, st->id);
    return report;
  }
  Fd root(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return fail("cannot open workspace {}: {}", workspace, errnoText(errno));
  Journal journal;
  if (auto r = journal.reopen(p.journal); !r) return std::unexpected(r.error());
  Runner run{root.get(), ".airlock-flush-" + st->id + "-", p.backupDir, &journal, nullptr, st->createdDirs, owner};
  if (mode == RecoveryMode::RollBack || !st->planned || st->rollingBack) {
    rollBack(run, st->steps, st->begun, report.undone, report.notes);
    if (auto r = journal.append("rolledback"); !r) return std::unexpected(r.error());
    finish(p, st->id);
    return report;
  }
  for (const Step& s : st->steps) {
    if (st->done.count(s.id) || st->skipped.count(s.id)) continue;
    run.removeTemp(s.path, s.id);
    bool keepBackup = !st->backedUp.count(s.id);
    StepResult res = run.apply(s, s.pre, s.post, s.staged, keepBackup, false);
    if (res.outcome == Outcome::IoError)
      return fail("cannot complete the interrupted flush into {}: {}; fix the cause and run airlock review again",
                  workspace, res.message);
    if (res.outcome == Outcome::Conflict) {
      report.notes.push_back(res.message);
      (void)journal.append(fmt::format("skip {}", s.id));
      continue;
    }
    if (auto r = journal.append(fmt::format("done {}", s.id)); !r) return std::unexpected(r.error());
    ++report.applied;
  }
  if (auto r = journal.append("committed"); !r) return std::unexpected(r.error());
  finish(p, st->id);
  return report;
}

}  // namespace airlock::workspace
