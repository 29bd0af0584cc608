#include "workspace/review.h"

#include <algorithm>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <set>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/visible_text.h"
#include "workspace/final_tree.h"
#include "workspace/relpath.h"
#include "workspace/safe_fs.h"

namespace airlock::workspace {
namespace {

const IgnoreRules& buildEntryRules() {
  static const IgnoreRules rules = [] {
    IgnoreRules r;
    r.addLines("Makefile\nmakefile\nGNUmakefile\nJustfile\njustfile\n.justfile\nTaskfile.y*ml\nTaskfile.dist.y*ml\n"
               "package.json\npyproject.toml\nsetup.py\nJenkinsfile\n");
    return r;
  }();
  return rules;
}

/// True when the flush leaves an executable file where there was none (a new
/// executable file, or execute bits added).
bool becomesExecutable(const DiffItem& it) {
  bool wasExec = it.base.exists && it.base.type == EntryType::File && (it.base.mode & 0111);
  return it.kind != ChangeKind::Skipped && it.agent.exists && it.agent.type == EntryType::File &&
         (landingMode(it.agent) & 0111) && !wasExec;
}

std::string linesText(const DiffItem& it) {
  if (it.kind == ChangeKind::Skipped) return "";
  if (it.conflict) return "conflict";
  if (it.binary) return "binary";
  if (it.tooLarge) return "large";
  bool files = (it.base.exists && it.base.type == EntryType::File) || (it.agent.exists && it.agent.type == EntryType::File);
  if (!files) return "";
  return fmt::format("+{} -{}", it.linesAdded, it.linesRemoved);
}

std::string flagsText(const DiffItem& it) {
  std::string f;
  auto add = [&](std::string_view s) {
    if (!f.empty()) f += ", ";
    f += s;
  };
  if (it.kind == ChangeKind::Skipped) add("skipped: " + it.skipReason);
  if (it.excluded == IgnoreVerdict::Secret) add("secret/config: never flushed");
  if (it.excluded == IgnoreVerdict::Ignored) add("ignored: never flushed");
  if (it.gitMetadata) add("git metadata: stays in the session, never flushed");
  else if (it.heldBack && !it.heldBackAs.empty()) add("held back: reached as " + displayPath(it.heldBackAs));
  else if (it.heldBack) add("held back");
  if (it.buildEntry) add("build entry point");
  if (it.specialBitsDropped) add("setuid/setgid/sticky stripped");
  if (it.linkEscapes) add("link points outside");
  if (becomesExecutable(it)) add("executable");
  if (it.agent.exists && it.agent.type != EntryType::Symlink && (landingMode(it.agent) & 0002)) add("world-writable");
  if (it.controlChars) add("control characters in content");
  bool nameEscaped = false;
  (void)visibleText(it.path, {}, &nameEscaped);
  if (nameEscaped) add("control characters in name");
  else if (hasNonAscii(it.path)) add("non-ASCII name");
  if (it.linkUnresolvable) add("link cannot be resolved");
  return f.empty() ? f : "[" + f + "]";
}

/// The mode column: the mode that lands for a created file or directory,
/// "OLD->NEW" when an existing one's mode changes, else "".
std::string modeCell(const DiffItem& it) {
  const Side& a = it.agent;
  if (!a.exists || a.type == EntryType::Symlink || it.kind == ChangeKind::Skipped) return "";
  bool sameType = it.base.exists && it.base.type == a.type;
  if (!sameType) return fmt::format("{:04o}", landingMode(a));
  if ((it.base.mode & 0777) == landingMode(a)) return "";
  return fmt::format("{:04o}->{:04o}", it.base.mode & 0777, landingMode(a));
}

Decision automatic(const DiffItem& it) {
  if (it.kind == ChangeKind::Skipped) return Decision::Skipped;
  if (it.gitMetadata || isGitMetadataPath(it.path)) return Decision::GitMetadata;
  if (it.excluded != IgnoreVerdict::Included) return Decision::Excluded;
  if (it.conflict) return Decision::Conflict;
  return Decision::Accepted;
}

/// The nearest ancestor of items[i] that the flush would create as a new
/// directory (an item whose agent side is a directory the baseline lacks).
const DiffItem* newParentDir(const std::vector<DiffItem>& items, size_t i, size_t* index) {
  for (std::string_view anc = parentPath(items[i].path); !anc.empty(); anc = parentPath(anc)) {
    auto it = std::lower_bound(items.begin(), items.end(), anc,
                               [](const DiffItem& d, std::string_view p) { return d.path < p; });
    if (it == items.end() || it->path != anc) continue;
    bool creates = it->agent.exists && it->agent.type == EntryType::Dir &&
                   !(it->base.exists && it->base.type == EntryType::Dir);
    if (!creates) continue;
    *index = static_cast<size_t>(it - items.begin());
    return &*it;
  }
  return nullptr;
}

/// Marks accepted items whose new parent directory is not accepted as Blocked
/// (parents first: items are ordered by path, so a parent is settled before its children).
void blockOrphans(const std::vector<DiffItem>& items, std::vector<Decision>& out) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (out[i] != Decision::Accepted) continue;
    size_t p = 0;
    if (newParentDir(items, i, &p) && out[p] != Decision::Accepted) out[i] = Decision::Blocked;
  }
}

constexpr std::string_view kHelp =
    "  a = accept   r = reject   d = show diff   A = accept all remaining (held-back stay pending)\n"
    "  R = reject all remaining   q = quit (reject the rest)   ? = this help\n"
    "  (type the letter, then Enter; held back = it runs code later on your host: git hooks, CI, editor tasks,\n"
    "  agent settings; accept it here with a, or with --review=all)\n";

}  // namespace

Result<ReviewMode> parseReviewMode(std::string_view text) {
  if (text == "interactive") return ReviewMode::Interactive;
  if (text == "auto") return ReviewMode::Auto;
  if (text == "all") return ReviewMode::All;
  if (text == "none") return ReviewMode::None;
  return failWith(exit_code::kUsage, "unknown review mode '{}'; use interactive, auto, all or none", text);
}

const char* decisionName(Decision d) {
  switch (d) {
    case Decision::Accepted: return "accepted";
    case Decision::Rejected: return "rejected";
    case Decision::Unreviewed: return "not reviewed";
    case Decision::HeldBack: return "held back";
    case Decision::Conflict: return "conflict";
    case Decision::Excluded: return "excluded";
    case Decision::Skipped: return "skipped";
    case Decision::Blocked: return "blocked";
    case Decision::GitMetadata: return "git metadata";
  }
  return "?";
}

bool isBuildEntryPath(std::string_view rel) {
  return buildEntryRules().matchEntry(rel, false) == IgnoreVerdict::Ignored;
}

namespace {

/// `rel` equals `dir` or lies below it, ASCII case folded (only ever stricter).
bool foldedWithin(std::string_view rel, std::string_view dir) {
  if (dir.empty()) return true;
  if (rel.size() < dir.size() || (rel.size() > dir.size() && rel[dir.size()] != '/')) return false;
  for (size_t i = 0; i < dir.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(rel[i])) != std::tolower(static_cast<unsigned char>(dir[i]))) return false;
  return true;
}

/// True when `dir` may be a git directory after the flush: HEAD with objects/
/// and refs/ (or with commondir), in any possible state. A directory counts
/// as present when anything below it may be: a hostile tar need not declare
/// "objects/" to have "objects/.keep" create it.
bool mayBeGitDir(const FinalTree& tree, std::string_view dir) {
  auto may = [&](std::string_view name) {
    std::string p = dir.empty() ? std::string(name) : std::string(dir) + "/" + std::string(name);
    for (const TreeNode& n : tree.states(p))
      if (n.exists) return true;
    return tree.mayHaveEntriesBelow(p);
  };
  return may("HEAD") && ((may("objects") && may("refs")) || may("commondir"));
}

/// True when `rel` or one of its ancestors (the root too) may be a git directory.
bool belowGitDir(const FinalTree& tree, std::string_view rel) {
  for (std::string_view d = rel;; d = parentPath(d)) {
    if (mayBeGitDir(tree, d)) return true;
    if (d.empty()) return false;
  }
}

/// Adds, as possible states, the symlinks the live host has now (and the
/// baseline lacks) in every directory that holds an item or an item's
/// ancestor: a link the user made during the session (.vscode -> cfg) would
/// otherwise give an accepted path a held-back name nobody modelled. At most
/// kMaxHostDirs directories of kMaxHostEntries entries each are read.
void addHostSymlinks(FinalTree& tree, const std::vector<DiffItem>& items, const Manifest& baseline, const HostView& host) {
  constexpr size_t kMaxHostDirs = 4096, kMaxHostEntries = 16384;
  std::set<std::string, std::less<>> dirs;
  for (const auto& it : items)
    for (std::string_view d = parentPath(it.path);; d = parentPath(d)) {
      if (!dirs.emplace(d).second || d.empty()) break;
    }
  dirs.emplace("");
  size_t read = 0;
  for (const auto& d : dirs) {
    if (++read > kMaxHostDirs) break;
    Fd dirFd;
    if (openBeneath(host.workspaceFd, d, O_RDONLY | O_DIRECTORY, 0, dirFd) != 0) continue;
    int dupFd = ::dup(dirFd.get());
    DIR* dir = dupFd >= 0 ? ::fdopendir(dupFd) : nullptr;
    if (!dir) {
      if (dupFd >= 0) ::close(dupFd);
      continue;
    }
    size_t n = 0;
    while (dirent* de = ::readdir(dir)) {
      if (++n > kMaxHostEntries) break;
      std::string_view name = de->d_name;
      if (name == "." || name == ".." || (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)) continue;
      char buf[4097];
      ssize_t len = ::readlinkat(dirFd.get(), de->d_name, buf, sizeof buf - 1);
      if (len < 0) continue;  // not a symlink
      std::string path = d.empty() ? std::string(name) : d + "/" + std::string(name);
      Side now;
      now.exists = true;
      now.type = EntryType::Symlink;
      now.target.assign(buf, static_cast<size_t>(len));
      if (host.rules && host.rules->match(path, false) != IgnoreVerdict::Included) continue;  // unmodelled: see below
      const ManifestEntry* was = baseline.find(path);
      if (was && was->type == EntryType::Symlink && was->target == now.target) continue;
      tree.addVariant(path, now);
    }
    ::closedir(dir);
  }
}

}  // namespace

void classifyItems(std::vector<DiffItem>& items, const Manifest& baseline, const HostView& host) {
  // Only what a flush may write is a possible state; the baseline stays possible everywhere.
  FinalTree tree(baseline);
  for (const auto& it : items)
    if (it.kind != ChangeKind::Skipped && it.excluded == IgnoreVerdict::Included && !it.conflict &&
        !isGitMetadataPath(it.path))
      tree.addVariant(it.path, it.agent);
  if (host.workspaceFd >= 0) addHostSymlinks(tree, items, baseline, host);
  // What the model lacks but the host has: resolving through it is guessing.
  tree.setKnownElsewhere([&host](const std::string& p) {
    if (host.rules && (host.rules->match(p, false) != IgnoreVerdict::Included ||
                       host.rules->match(p, true) != IgnoreVerdict::Included))
      return true;
    if (host.workspaceFd < 0) return false;
    auto live = inspectBeneath(host.workspaceFd, p, false);
    return !live || live->type != LiveState::Type::Absent;  // a symlink on the way fails: known, unmodelled
  });
  tree.finish();
  const bool indexIncomplete = tree.exhausted();
  auto heldPath = [&host](std::string_view p) {
    if (isHeldBackPath(p)) return true;
    for (const auto& g : host.gitConfigPaths)
      if (foldedWithin(p, g)) return true;
    return false;
  };
  auto couldHoldBelow = [&host](std::string_view p) {
    if (couldHoldBackBelow(p)) return true;
    for (const auto& g : host.gitConfigPaths)
      if (foldedWithin(p, g) || foldedWithin(g, p)) return true;
    return false;
  };
  // The symlinks through which some name of an existing entry is held back.
  bool allNamed = true;
  const auto exposing = tree.linksPassedBy([&](const std::string& p) { return heldPath(p); }, allNamed);
  for (auto& it : items) {
    it.gitMetadata = isGitMetadataPath(it.path) || belowGitDir(tree, it.path);
    std::vector<std::string> names;
    bool bounded = tree.aliases(it.path, names);
    bool held = !bounded;
    for (const auto& n : names)
      if (heldPath(n)) {
        held = true;
        if (n != it.path && !heldPath(it.path)) it.heldBackAs = n;
        break;
      }
    if (it.agent.exists && it.agent.type == EntryType::Symlink) {
      // A symlink out of the workspace lets later tools (editors, builds)
      // write outside it; one that loops or dangles through another link may
      // land anywhere once the host changes: never accepted unseen.
      auto outcomes = tree.resolveLink(it.path, it.agent.target);
      for (const auto& o : outcomes) {
        it.linkEscapes = it.linkEscapes || o.kind == Resolution::Kind::Outside;
        it.linkUnresolvable = it.linkUnresolvable || o.kind == Resolution::Kind::Unresolvable ||
                              (o.kind == Resolution::Kind::Missing && o.hops > 0);
        // Writing through a link to a held-back path (or into .git) writes that path.
        bool lands = o.kind == Resolution::Kind::Inside || o.kind == Resolution::Kind::Missing;
        held = held || (lands && heldPath(o.path));
        // A link into a git directory is git metadata: later writes through it reach .git.
        bool inside = o.kind != Resolution::Kind::Outside;
        it.gitMetadata = it.gitMetadata || (inside && (isGitMetadataPath(o.path) || belowGitDir(tree, o.path)));
      }
      held = held || it.linkEscapes || it.linkUnresolvable;
      for (const auto& n : names) held = held || couldHoldBelow(n);
      held = held || !allNamed || exposing.count(it.path);
      bool escaped = false;
      (void)visibleText(it.agent.target, {}, &escaped);
      it.controlChars = it.controlChars || escaped;
    }
    // Out of resolver work before every link was indexed: any item may be
    // reached through a link nobody resolved.
    if (indexIncomplete) it.linkUnresolvable = held = true;
    it.heldBack = held || it.gitMetadata;
    it.buildEntry = isBuildEntryPath(it.path);
    if (it.buildEntry && baseName(it.path) == "package.json") {
      auto text = it.staged.empty() ? Result<std::string>(std::string()) : readFile(it.staged, 8 << 20);
      it.buildEntry = text && text->find("\"scripts\"") != std::string::npos;
    }
  }
  // A new directory that holds only held-back changes is held back with them:
  // accepting it alone would leave, say, an empty .git/ that breaks git.
  // Deepest first, so a directory sees its subdirectories' verdicts.
  std::vector<DiffItem*> dirs;
  for (auto& it : items)
    if (it.kind == ChangeKind::DirAdded && !it.heldBack) dirs.push_back(&it);
  std::sort(dirs.begin(), dirs.end(), [](const DiffItem* a, const DiffItem* b) { return a->path.size() > b->path.size(); });
  for (DiffItem* dir : dirs) {
    const std::string prefix = dir->path + "/";
    bool any = false, allHeld = true;
    for (const auto& it : items)
      if (it.path.starts_with(prefix)) {
        any = true;
        allHeld = allHeld && it.heldBack;
      }
    dir->heldBack = any && allHeld;
  }
}

std::string summaryTable(const std::vector<DiffItem>& items, const std::vector<Decision>* decisions) {
  std::string out = fmt::format("{:>4}  {:<16} {:<10} {:<10} {}{}\n", "#", "kind", "+/-", "mode",
                                decisions ? "decision     " : "", "path");
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    std::string dec = decisions ? fmt::format("{:<12} ", decisionName((*decisions)[i])) : "";
    std::string flags = flagsText(it);
    size_t parent = 0;
    const DiffItem* dir = decisions && (*decisions)[i] == Decision::Blocked ? newParentDir(items, i, &parent) : nullptr;
    if (dir) {
      std::string why = fmt::format("new directory '{}' not accepted: stays pending", displayPath(dir->path));
      flags = flags.empty() ? "[" + why + "]" : flags.substr(0, flags.size() - 1) + ", " + why + "]";
    }
    out += fmt::format("{:>4}  {:<16} {:<10} {:<10} {}{}{}{}\n", i + 1, changeKindName(it.kind), linesText(it),
                       modeCell(it), dec, displayPath(it.path), flags.empty() ? "" : "  ", flags);
  }
  return out;
}

void FdTerminal::print(std::string_view text) { (void)writeAll(fd_, text); }

std::optional<std::string> FdTerminal::readLine() {
  std::string line;
  char c;
  for (;;) {
    ssize_t n = ::read(fd_, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return line.empty() ? std::nullopt : std::optional<std::string>(line);
    if (c == '\n') return line;
    line.push_back(c);
  }
}

void FdTerminal::page(const std::string& text) {
  if (pagerFailed_ || pager_.empty()) return print(text);
  int status = -1;
  int in[2];
  if (::pipe2(in, O_CLOEXEC) == 0) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(in[0], 0);
      ::dup2(fd_, 1);
      ::execl("/bin/sh", "sh", "-c", pager_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    struct sigaction ignore {}, old {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old);  // the user may quit the pager early
    if (pid > 0) (void)writeAll(in[1], text);
    ::close(in[1]);
    if (pid > 0)
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    ::sigaction(SIGPIPE, &old, nullptr);
  }
  if (status == 0) return;
  pagerFailed_ = true;
  std::string why = status == -1                                       ? "could not be started"
                    : WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "could not be started (command not found)"
                    : WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                        : "was killed";
  print(fmt::format("airlock: pager '{}' {}; showing diffs here instead (set PAGER to change it)\n", pager_, why));
  print(text);
}

Result<std::vector<Decision>> decide(const std::vector<DiffItem>& items, ReviewMode mode, const ThreeWayDiff& diff,
                                     ReviewTerminal* term, bool haveTty) {
  std::vector<Decision> out(items.size(), Decision::Rejected);
  if (mode == ReviewMode::Interactive && (!haveTty || !term))
    return failWith(exit_code::kUsage,
                    "interactive review needs a terminal on stdin; pass --review=auto (accept all but held-back "
                    "paths) or --review=none (keep every change in the session, flush nothing)");
  for (size_t i = 0; i < items.size(); ++i) {
    Decision d = automatic(items[i]);
    if (d != Decision::Accepted) {
      out[i] = d;
      continue;
    }
    switch (mode) {
      case ReviewMode::Auto: out[i] = items[i].heldBack ? Decision::HeldBack : Decision::Accepted; break;
      case ReviewMode::All: out[i] = Decision::Accepted; break;
      case ReviewMode::None: out[i] = Decision::Unreviewed; break;
      case ReviewMode::Interactive: out[i] = Decision::Rejected; break;
    }
  }
  if (mode != ReviewMode::Interactive) {
    blockOrphans(items, out);
    return out;
  }

  term->print(summaryTable(items));
  enum class Rest { Ask, AcceptAll, RejectAll } rest = Rest::Ask;
  for (size_t i = 0; i < items.size(); ++i) {
    const DiffItem& it = items[i];
    if (automatic(it) != Decision::Accepted) {
      term->print(fmt::format("[{}/{}] {} {}: {}{}\n", i + 1, items.size(), changeKindName(it.kind),
                              displayPath(it.path), decisionName(automatic(it)),
                              it.skipReason.empty() ? "" : " (" + it.skipReason + ")"));
      continue;
    }
    if (rest == Rest::AcceptAll) {
      out[i] = it.heldBack ? Decision::HeldBack : Decision::Accepted;
      continue;
    }
    if (rest == Rest::RejectAll) {
      out[i] = Decision::Rejected;
      continue;
    }
    for (;;) {
      std::string flags = flagsText(it);
      std::string modeText = modeCell(it);
      term->print(fmt::format("[{}/{}] {}{}{} {} {}{}{}\n  accept? [a,r,d,A,R,q,?] ", i + 1, items.size(),
                              changeKindName(it.kind), modeText.empty() ? "" : " ", modeText, displayPath(it.path),
                              linesText(it), flags.empty() ? "" : " ", flags));
      auto line = term->readLine();
      if (!line) {  // end of input (Ctrl-D): the rest stays pending, on a line of its own
        term->print("\n");
        rest = Rest::RejectAll;
        out[i] = Decision::Rejected;
        break;
      }
      std::string_view ans = *line;
      while (!ans.empty() && (ans.back() == ' ' || ans.back() == '\r')) ans.remove_suffix(1);
      if (ans == "a" || ans == "y") {
        out[i] = Decision::Accepted;
      } else if (ans == "r" || ans == "n") {
        out[i] = Decision::Rejected;
      } else if (ans == "d") {
        auto p = diff.patch(it, true);
        term->page(p ? *p : p.error().message + "\n");
        continue;
      } else if (ans == "A") {
        rest = Rest::AcceptAll;
        out[i] = it.heldBack ? Decision::HeldBack : Decision::Accepted;
      } else if (ans == "R" || ans == "q") {
        rest = Rest::RejectAll;
        out[i] = Decision::Rejected;
      } else {
        term->print(kHelp);
        continue;
      }
      break;
    }
  }
  blockOrphans(items, out);
  for (size_t i = 0; i < items.size(); ++i) {
    size_t p = 0;
    if (out[i] == Decision::Blocked && newParentDir(items, i, &p))
      term->print(fmt::format("{} stays pending: its new directory '{}' was not accepted\n", displayPath(items[i].path),
                              displayPath(items[p].path)));
  }
  return out;
}

}  // namespace airlock::workspace
