#include "workspace/diff.h"

#include <fcntl.h>
#include <git2.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/sha256.h"
#include "common/visible_text.h"
#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

void initGit() {
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });
}

bool sameContent(const Side& a, const Side& b) {
  if (a.exists != b.exists) return false;
  if (!a.exists) return true;
  if (a.type != b.type) return false;
  switch (a.type) {
    case EntryType::File: return a.sha256 == b.sha256 && (a.mode & 0777) == (b.mode & 0777);
    case EntryType::Symlink: return a.target == b.target;
    case EntryType::Dir: return true;
  }
  return false;
}

Side fromManifest(const ManifestEntry* e) {
  Side s;
  if (!e) return s;
  s.exists = true;
  s.type = e->type;
  s.mode = e->mode;
  s.size = e->size;
  s.sha256 = e->sha256;
  s.target = e->target;
  return s;
}

bool linkEscapes(std::string_view path, std::string_view target) {
  if (target.empty() || target.front() == '/') return true;
  long depth = static_cast<long>(pathDepth(parentPath(path)));
  size_t pos = 0;
  while (pos <= target.size()) {
    size_t slash = target.find('/', pos);
    if (slash == std::string_view::npos) slash = target.size();
    std::string_view part = target.substr(pos, slash - pos);
    if (part == "..") {
      if (--depth < 0) return true;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
    pos = slash + 1;
  }
  return false;
}

bool looksBinary(std::string_view s) { return s.substr(0, 8000).find('\0') != std::string_view::npos; }

std::string modeText(uint32_t m) { return fmt::format("{:04o}", m); }

/// git's mode for a regular file: 100755 when any execute bit is set.
const char* gitMode(uint32_t m) { return (m & 0111) ? "100755" : "100644"; }

/// Puts the modes that land into libgit2's header lines (git_patch_from_buffers
/// knows no modes and writes 100644): "new file mode", "deleted file mode",
/// "index a..b MODE", and "old mode"/"new mode" when the execute bit changes.
std::string withGitModes(const std::string& text, const Side& b, const Side& a, bool baseFile, bool agentFile) {
  std::string out;
  size_t pos = 0;
  bool inHeader = true;
  bool modeChange = baseFile && agentFile && std::string_view(gitMode(b.mode)) != gitMode(landingMode(a));
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (inHeader) {
      if (line.starts_with("---") || line.starts_with("@@") || line.starts_with("Binary")) inHeader = false;
      else if (line.starts_with("new file mode ") && agentFile)
        line = std::string("new file mode ") + gitMode(landingMode(a));
      else if (line.starts_with("deleted file mode ") && baseFile)
        line = std::string("deleted file mode ") + gitMode(b.mode);
      else if (line.starts_with("index ") && baseFile && agentFile) {
        line = line.substr(0, line.find(' ', 6));
        if (modeChange)
          line = fmt::format("old mode {}\nnew mode {}\n{}", gitMode(b.mode), gitMode(landingMode(a)), line);
        else
          line += std::string(" ") + gitMode(b.mode);
      }
    }
    out += line;
    out += '\n';
  }
  return out;
}

std::string shortHash(const std::string& sha) { return sha.empty() ? "-" : sha.substr(0, 12); }

/// Every line of `patch` through visibleText() (tabs kept, kEscapedMark after
/// a line with escapes), colored by its first character when `color` (escapes
/// then in inverse video, the mark in bold yellow).
std::string render(const std::string& patch, bool color) {
  VisibleOptions opt{.keepTabs = true};
  if (color) opt.markOn = "\x1b[7m", opt.markOff = "\x1b[27m";
  std::string out;
  size_t pos = 0;
  while (pos < patch.size()) {
    size_t nl = patch.find('\n', pos);
    if (nl == std::string::npos) nl = patch.size();
    std::string_view line(patch.data() + pos, nl - pos);
    const char* lineColor = nullptr;
    if (line.starts_with("+++") || line.starts_with("---") || line.starts_with("diff ")) lineColor = "\x1b[1m";
    else if (line.starts_with("+")) lineColor = "\x1b[32m";
    else if (line.starts_with("-")) lineColor = "\x1b[31m";
    else if (line.starts_with("@@")) lineColor = "\x1b[36m";
    if (!color) lineColor = nullptr;
    // A CR that ends the line (a CRLF file) hides nothing: it is shown
    // escaped, but does not mark the line.
    bool crlf = line.ends_with('\r');
    if (crlf) line.remove_suffix(1);
    bool escaped = false;
    std::string shown = visibleText(line, opt, &escaped);
    if (crlf) shown += fmt::format("{}\\x0d{}", opt.markOn, opt.markOff);
    if (lineColor) out += lineColor;
    out += shown;
    if (lineColor) out += "\x1b[0m";
    if (escaped) out += color ? fmt::format("\x1b[1;33m{}\x1b[0m", kEscapedMark) : std::string(kEscapedMark);
    out += '\n';
    pos = nl + 1;
  }
  return out;
}

/// True when a line libgit2 marks as added holds a character visibleText() escapes.
bool addedLineHasControls(git_patch* patch) {
  for (size_t h = 0; h < git_patch_num_hunks(patch); ++h) {
    int lines = git_patch_num_lines_in_hunk(patch, h);
    for (int l = 0; l < lines; ++l) {
      const git_diff_line* line = nullptr;
      if (git_patch_get_line_in_hunk(&line, patch, h, static_cast<size_t>(l)) != 0 ||
          line->origin != GIT_DIFF_LINE_ADDITION)
        continue;
      std::string_view text(line->content, line->content_len);
      if (text.ends_with('\n')) text.remove_suffix(1);
      if (text.ends_with('\r')) text.remove_suffix(1);  // CRLF: shown, not flagged
      bool escaped = false;
      (void)visibleText(text, {.keepTabs = true}, &escaped);
      if (escaped) return true;
    }
  }
  return false;
}

}  // namespace

uint32_t landingMode(const Side& s) {
  if (!s.exists || s.type == EntryType::Symlink) return 0;
  return s.type == EntryType::Dir ? (s.mode & 0777) | 0700 : s.mode & 0777;
}

const char* changeKindName(ChangeKind k) {
  switch (k) {
    case ChangeKind::Added: return "added";
    case ChangeKind::Modified: return "modified";
    case ChangeKind::ModeChanged: return "mode changed";
    case ChangeKind::Deleted: return "deleted";
    case ChangeKind::SymlinkAdded: return "symlink added";
    case ChangeKind::SymlinkChanged: return "symlink changed";
    case ChangeKind::SymlinkRemoved: return "symlink removed";
    case ChangeKind::TypeChanged: return "type changed";
    case ChangeKind::DirAdded: return "dir added";
    case ChangeKind::DirRemoved: return "dir removed";
    case ChangeKind::Skipped: return "skipped";
  }
  return "changed";
}

Result<Side> liveSide(int workspaceFd, std::string_view rel) {
  auto st = inspectBeneath(workspaceFd, rel, true);
  if (!st) return std::unexpected(st.error());
  Side s;
  switch (st->type) {
    case LiveState::Type::Absent: return s;
    case LiveState::Type::File: s.type = EntryType::File; break;
    case LiveState::Type::Dir: s.type = EntryType::Dir; break;
    case LiveState::Type::Symlink: s.type = EntryType::Symlink; break;
    case LiveState::Type::Other:
      return fail("'{}' is now a FIFO, socket or device node on the host", displayPath(rel));
  }
  s.exists = true;
  s.mode = st->mode;
  s.size = st->type == LiveState::Type::File ? st->size : 0;
  s.sha256 = std::move(st->sha256);
  s.target = std::move(st->target);
  return s;
}

Result<DiffResult> ThreeWayDiff::run() const {
  const auto& changes = changes_.changes();
  // Agent side of every path the upper layer names, plus the baseline entries
  // it hides (below whiteouts, non-directories and opaque directories).
  std::map<std::string, Side, std::less<>> agent;
  std::map<std::string, std::string, std::less<>> staged;
  for (const auto& [path, c] : changes) {
    const ManifestEntry* base = baseline_.find(path);
    Side s;
    if (c.kind != Change::Kind::Whiteout) {
      s.exists = true;
      s.mode = c.mode;
      switch (c.kind) {
        case Change::Kind::File:
          s.type = EntryType::File, s.size = c.size, s.sha256 = c.sha256;
          staged[path] = changes_.stagedPath(c);
          break;
        case Change::Kind::Symlink: s.type = EntryType::Symlink, s.target = c.target; break;
        default:
          s.type = EntryType::Dir;
          if (c.implied) s.mode = base && base->type == EntryType::Dir ? base->mode : 0755;
          break;
      }
      // A file or directory the flush creates gets the user's umask.
      if (s.type != EntryType::Symlink && !(base && base->type == s.type)) s.mode &= ~umask_;
    }
    // Every ancestor must be a directory in the result.
    std::string_view anc = parentPath(path);
    while (!anc.empty()) {
      auto ch = changes.find(anc);
      if (ch != changes.end()) {
        if (ch->second.kind != Change::Kind::Dir)
          return failWith(exit_code::kUnsafeChangeSet,
                          "entry '{}' lies below '{}', which the change set does not make a directory; it was refused",
                          displayPath(path), displayPath(anc));
        break;
      }
      const ManifestEntry* b = baseline_.find(anc);
      if (b && b->type != EntryType::Dir)
        return failWith(exit_code::kUnsafeChangeSet,
                        "entry '{}' lies below '{}', a {} in the baseline; paths through symlinks are refused",
                        displayPath(path), displayPath(anc), entryTypeName(b->type));
      if (b) break;
      anc = parentPath(anc);
    }
    if (!path.empty()) agent[path] = std::move(s);
    bool hides = c.kind != Change::Kind::Dir || c.opaque;
    if (hides) {
      for (auto& below : baseline_.below(path))
        if (!changes.count(below)) agent.emplace(below, Side{});
    }
  }
  DiffResult result;
  // A linked worktree: the baseline's .git is the snapshot's own repository
  // (linked_git_dir.h), the live one a file naming it. Those items (held
  // back, never flushed) have no live side to compare with.
  struct stat dotGit {};
  const bool liveGitIsFile = workspaceFd_ >= 0 &&
                             ::fstatat(workspaceFd_, ".git", &dotGit, AT_SYMLINK_NOFOLLOW) == 0 &&
                             S_ISREG(dotGit.st_mode);
  for (auto& [path, a] : agent) {
    DiffItem item;
    item.path = path;
    item.base = fromManifest(baseline_.find(path));
    item.agent = a;
    if (auto st = staged.find(path); st != staged.end()) item.staged = st->second;
    const Side& b = item.base;
    if (!b.exists && !a.exists) continue;
    if (b.exists && a.exists && b.type == a.type) {
      bool modeDiff = (b.mode & 0777) != (a.mode & 0777);
      if (a.type == EntryType::File) {
        if (b.sha256 != a.sha256) item.kind = ChangeKind::Modified;
        else if (modeDiff) item.kind = ChangeKind::ModeChanged;
        else continue;
      } else if (a.type == EntryType::Symlink) {
        if (b.target == a.target) continue;
        item.kind = ChangeKind::SymlinkChanged;
      } else {
        if (!modeDiff) continue;
        item.kind = ChangeKind::ModeChanged;
      }
    } else if (b.exists && a.exists) {
      item.kind = ChangeKind::TypeChanged;
    } else if (a.exists) {
      item.kind = a.type == EntryType::File ? ChangeKind::Added
                  : a.type == EntryType::Dir ? ChangeKind::DirAdded
                                             : ChangeKind::SymlinkAdded;
    } else {
      item.kind = b.type == EntryType::File ? ChangeKind::Deleted
                  : b.type == EntryType::Dir ? ChangeKind::DirRemoved
                                             : ChangeKind::SymlinkRemoved;
    }
    bool isDir = (a.exists ? a.type : b.type) == EntryType::Dir;
    item.excluded = rules_.match(path, isDir);
    item.specialBitsDropped = a.exists && a.type != EntryType::Symlink && (a.mode & 07000);
    item.linkEscapes = a.exists && a.type == EntryType::Symlink && linkEscapes(path, a.target);
    const bool comparable = !liveGitIsFile || (path != ".git" && !path.starts_with(".git/"));
    auto live = comparable ? liveSide(workspaceFd_, path) : Result<Side>(Side{});
    if (!live) {
      item.conflict = true;
      item.conflictReason = live.error().message;
    } else {
      item.live = std::move(*live);
      if (comparable && !sameContent(item.live, b)) {
        if (sameContent(item.live, a) && (a.type != EntryType::Dir || (item.live.mode & 0777) == (a.mode & 0777))) {
          ++result.alreadyApplied;
          continue;
        }
        item.conflict = true;
        item.conflictReason = fmt::format("'{}' was changed on the host since the snapshot; it is not overwritten",
                                          displayPath(path));
      }
    }
    if (auto r = fill(item); !r) return std::unexpected(r.error());
    result.items.push_back(std::move(item));
  }
  for (const SkippedEntry& sk : changes_.skipped()) {
    DiffItem item;
    item.path = sk.path;
    item.kind = ChangeKind::Skipped;
    item.skipReason = sk.reason;
    item.base = fromManifest(baseline_.find(sk.path));
    item.agent.size = sk.size;
    result.items.push_back(std::move(item));
  }
  std::stable_sort(result.items.begin(), result.items.end(),
                   [](const DiffItem& x, const DiffItem& y) { return x.path < y.path; });
  return result;
}

Result<std::string> ThreeWayDiff::baseContent(const DiffItem& item) const {
  if (!item.base.exists || item.base.type != EntryType::File) return std::string();
  for (int fd : {baselineFd_, workspaceFd_}) {
    if (fd < 0) continue;
    Fd f;
    if (openBeneath(fd, item.path, O_RDONLY | O_NONBLOCK, 0, f) != 0) continue;
    struct stat st {};
    if (::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::string data(static_cast<size_t>(std::min<uint64_t>(st.st_size, maxDiffBytes_)), '\0');
    ssize_t n = readFull(f.get(), data.data(), data.size());
    if (n < 0) continue;
    data.resize(static_cast<size_t>(n));
    if (sha256Hex(data) == item.base.sha256) return data;
  }
  return fail("the baseline content of '{}' is no longer available (no snapshot copy, and the host file changed)",
              displayPath(item.path));
}

std::optional<std::string> ThreeWayDiff::hostContent(const DiffItem& item) const {
  Fd f;
  struct stat st {};
  if (workspaceFd_ < 0 || openBeneath(workspaceFd_, item.path, O_RDONLY | O_NONBLOCK, 0, f) != 0 ||
      ::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > maxDiffBytes_)
    return std::nullopt;
  std::string data(static_cast<size_t>(st.st_size), '\0');
  ssize_t n = readFull(f.get(), data.data(), data.size());
  if (n < 0) return std::nullopt;
  data.resize(static_cast<size_t>(n));
  return data;
}

Result<> ThreeWayDiff::fill(DiffItem& item) const {
  bool baseFile = item.base.exists && item.base.type == EntryType::File;
  bool agentFile = item.agent.exists && item.agent.type == EntryType::File;
  if (!baseFile && !agentFile) return {};
  if ((baseFile && item.base.size > maxDiffBytes_) || (agentFile && item.agent.size > maxDiffBytes_)) {
    item.tooLarge = true;
    return {};
  }
  std::string oldText, newText;
  if (baseFile) {
    // The baseline is gone: compare with the host's file as it is now.
    auto base = baseContent(item);
    item.comparedWithHost = !base;
    auto b = base ? std::optional<std::string>(std::move(*base)) : hostContent(item);
    if (!b) {
      item.baseGone = true;  // nothing to compare with: summary only
      return {};
    }
    oldText = std::move(*b);
  }
  if (agentFile) {
    auto n = readFile(item.staged, maxDiffBytes_);
    if (!n) return std::unexpected(n.error());
    newText = std::move(*n);
  }
  if (looksBinary(oldText) || looksBinary(newText)) {
    item.binary = true;
    return {};
  }
  initGit();
  git_patch* patch = nullptr;
  if (git_patch_from_buffers(&patch, oldText.data(), oldText.size(), "a", newText.data(), newText.size(), "b",
                             nullptr) != 0)
    return fail("cannot compute the diff of '{}'", displayPath(item.path));
  size_t ctx = 0, adds = 0, dels = 0;
  git_patch_line_stats(&ctx, &adds, &dels, patch);
  item.controlChars = addedLineHasControls(patch);
  git_patch_free(patch);
  item.linesAdded = adds;
  item.linesRemoved = dels;
  return {};
}

Result<std::string> ThreeWayDiff::patch(const DiffItem& item, bool color) const {
  std::string name = displayPath(item.path);
  std::string head = fmt::format("{}: {}\n", name, changeKindName(item.kind));
  if (item.conflict) head += fmt::format("CONFLICT: {}\n", item.conflictReason);
  if (item.excluded != IgnoreVerdict::Included)
    head += "EXCLUDED: this path is a secret, an airlock config file or ignored; it is never flushed\n";
  const Side& b = item.base;
  const Side& a = item.agent;
  if (item.kind == ChangeKind::Skipped)
    return head + fmt::format("SKIPPED: {}; it is not flushed\n", item.skipReason);
  // The mode that lands, and the setuid/setgid/sticky bits the agent asked for.
  bool sameType = b.exists && a.exists && b.type == a.type;
  if (a.exists && a.type != EntryType::Symlink) {
    std::string asked = item.specialBitsDropped
                            ? fmt::format(" (the agent set {}; setuid/setgid/sticky bits are stripped on flush)",
                                          modeText(a.mode & 07777))
                            : "";
    std::string exec = a.type == EntryType::File && (landingMode(a) & 0111) ? ", executable" : "";
    if (sameType && (b.mode & 0777) != landingMode(a))
      head += fmt::format("mode {} -> {}{}{}\n", modeText(b.mode & 0777), modeText(landingMode(a)), exec, asked);
    else if (!sameType || !asked.empty())
      head += fmt::format("mode {}{}{}\n", modeText(landingMode(a)), exec, asked);
  }
  if (a.exists && a.type == EntryType::Symlink)
    head += fmt::format("symlink -> '{}'{}\n", displayPath(a.target),
                        item.linkEscapes ? "  (points outside the workspace)" : "");
  if (b.exists && b.type == EntryType::Symlink) head += fmt::format("was symlink -> '{}'\n", displayPath(b.target));
  if (item.kind == ChangeKind::TypeChanged)
    head += fmt::format("type {} -> {}\n", entryTypeName(b.type), entryTypeName(a.type));
  bool baseFile = b.exists && b.type == EntryType::File;
  bool agentFile = a.exists && a.type == EntryType::File;
  if (!baseFile && !agentFile) return head;
  if (item.baseGone) {
    head += fmt::format("content not shown: the session's copy of the original is gone and the host's file "
                        "changed since ({} bytes -> {} bytes)\n", baseFile ? b.size : 0, agentFile ? a.size : 0);
    head += fmt::format("sha256 {} -> {}\n", baseFile ? shortHash(b.sha256) : "-",
                        agentFile ? shortHash(a.sha256) : "-");
    return head;
  }
  if (item.tooLarge || item.binary) {
    head += fmt::format("{} file: {} bytes -> {} bytes; content not shown\n", item.binary ? "binary" : "large",
                        baseFile ? b.size : 0, agentFile ? a.size : 0);
    head += fmt::format("sha256 {} -> {}\n", baseFile ? shortHash(b.sha256) : "-",
                        agentFile ? shortHash(a.sha256) : "-");
    return head;
  }
  std::string oldText, newText;
  if (baseFile) {
    auto t = item.comparedWithHost ? hostContent(item) : baseContent(item).value_or(std::string());
    if (!t) return fail("the host's '{}' changed during the review", name);
    oldText = std::move(*t);
    if (item.comparedWithHost)
      head += "the session's copy of the original is gone and the host's file changed since: shown against the "
              "host's file as it is now\n";
  }
  if (agentFile) {
    auto t = readFile(item.staged, maxDiffBytes_);
    if (!t) return std::unexpected(t.error());
    newText = std::move(*t);
  }
  initGit();
  git_patch* p = nullptr;
  if (git_patch_from_buffers(&p, baseFile ? oldText.data() : nullptr, oldText.size(), name.c_str(),
                             agentFile ? newText.data() : nullptr, newText.size(), name.c_str(), nullptr) != 0)
    return fail("cannot compute the diff of '{}'", name);
  git_buf buf = GIT_BUF_INIT;
  int rc = git_patch_to_buf(&buf, p);
  git_patch_free(p);
  if (rc != 0) return fail("cannot render the diff of '{}'", name);
  std::string text = withGitModes(std::string(buf.ptr, buf.size), b, a, baseFile, agentFile);
  git_buf_dispose(&buf);
  if (text.empty() && baseFile && agentFile && std::string_view(gitMode(b.mode)) != gitMode(landingMode(a)))
    text = fmt::format("diff --git a/{0} b/{0}\nold mode {1}\nnew mode {2}\n", name, gitMode(b.mode),
                       gitMode(landingMode(a)));
  return head + render(text, color);
}

}  // namespace airlock::workspace
