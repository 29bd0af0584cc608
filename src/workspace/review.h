#pragma once
// The review gate's policy: which items are held back (they run code later),
// which are flagged as build entry points, and the decision for every item
// under --review=interactive|auto|all|none. Interactive review talks through
// a ReviewTerminal so it can be driven by tests.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "workspace/diff.h"
#include "workspace/held_back.h"
#include "workspace/manifest.h"

namespace airlock::workspace {

/// How the review gate decides.
enum class ReviewMode {
  Interactive,  ///< ask per item (needs a terminal)
  Auto,         ///< accept all but held-back paths
  All,          ///< accept everything, held-back paths included
  None,         ///< reject everything (kept in the session)
};

/// Parses "interactive", "auto", "all" or "none"; the error names the choices.
Result<ReviewMode> parseReviewMode(std::string_view text);

/// The outcome for one item.
enum class Decision {
  Accepted,  ///< will be flushed
  Rejected,  ///< kept in the session, not flushed
  Unreviewed,  ///< --review=none: kept in the session for a later review, not flushed
  HeldBack,  ///< held-back path not explicitly accepted: kept, reported
  Conflict,  ///< changed on the host: kept, never flushed silently
  Excluded,  ///< secret / ignored path: never flushed
  Skipped,   ///< not reviewable (FIFO, socket, device node, oversized file): reported, never flushed
  Blocked,   ///< accepted, but its new parent directory was not: kept, reported
  GitMetadata,  ///< at or below a .git (dir or gitfile), deletions too: kept in the session, never flushed
};

/// Short name ("accepted", "held back", ...).
const char* decisionName(Decision d);

/// True for build entry points (Makefile, Justfile, Taskfile, package.json,
/// pyproject.toml, setup.py, Jenkinsfile).
bool isBuildEntryPath(std::string_view rel);

/// What classifyItems() knows of the host beyond the baseline (each part optional).
struct HostView {
  /// The live workspace root: a path the model lacks that exists there (lstat,
  /// no symlink followed) makes a resolution through it unresolvable, and the
  /// symlinks it has now (made during the session) in the directories of the
  /// items and their ancestors are possible states too.
  int workspaceFd = -1;
  /// The snapshot's rules: a path they keep out (secret, ignored) is not in the
  /// model, so a resolution through it is unresolvable too.
  const IgnoreRules* rules = nullptr;
  /// gitConfigNamedPaths(): held back, with everything below them.
  std::vector<std::string> gitConfigPaths;
};

/// Sets heldBack, heldBackAs, gitMetadata, linkEscapes, linkUnresolvable and
/// buildEntry on every item, judged in the final tree (FinalTree: `baseline`
/// with every item's agent state as a possibility). Held back is an item
/// when any path naming it (through any chain of symlinks) is on the
/// held-back list, or more than FinalTree::kMaxAliases do; a symlink item
/// also when it resolves outside the workspace or cannot be resolved (loop,
/// over 40 hops, dangling through another link), when it sits where a
/// held-back pattern could match below it, or when any existing path reached
/// through it is held back. package.json is flagged only when the agent's
/// version has a "scripts" section. Git metadata is also every item at or
/// below a directory that is a git dir in the final tree (HEAD plus objects/
/// and refs/, or HEAD plus commondir: an embedded bare repository), and a
/// symlink that resolves into one (or into a .git). A symlink target with
/// control characters sets controlChars. All resolution shares
/// FinalTree::kMaxTotalWork: once it is spent, every symlink item, and every
/// item when the link index is incomplete, is held back as unresolvable.
void classifyItems(std::vector<DiffItem>& items, const Manifest& baseline, const HostView& host = {});

/// A summary table: one row per item with kind, +/- lines, the mode that
/// lands (created paths) or OLD->NEW (mode changes), and flags: skipped items
/// name why, blocked items the parent directory; "executable" (the flush makes
/// a file executable), "control characters in content" (an added line has
/// escaped characters), "non-ASCII name" (possible homoglyph).
std::string summaryTable(const std::vector<DiffItem>& items, const std::vector<Decision>* decisions = nullptr);

/// The user's side of interactive review.
class ReviewTerminal {
 public:
  virtual ~ReviewTerminal() = default;
  /// Writes text to the user.
  virtual void print(std::string_view text) = 0;
  /// Reads one answer line (without the newline); nullopt at end of input.
  virtual std::optional<std::string> readLine() = 0;
  /// Shows a long text (a colored diff) through the user's pager.
  virtual void page(const std::string& text) = 0;
  /// Called once, right before the first question (after the change set is
  /// staged and diffed): a terminal resets what the agent left on it and
  /// drops keys typed so far, so they cannot answer that question.
  virtual void begin() {}
};

/// The user's terminal as one read/write descriptor (the cli opens
/// /dev/tty, as `git add -p` does, so the review works whatever stdin and
/// stdout are). Diffs go through a pager command (the cli passes $PAGER,
/// default "less -R") whose stdout is that terminal. When the pager cannot
/// run or exits non-zero, the text is printed on the terminal instead, with a
/// one-time note, and the pager is not tried again. `fd` is not owned.
class FdTerminal : public ReviewTerminal {
 public:
  FdTerminal(int fd, std::string pager) : fd_(fd), pager_(std::move(pager)) {}
  void print(std::string_view text) override;
  std::optional<std::string> readLine() override;
  void page(const std::string& text) override;

 private:
  int fd_;
  std::string pager_;
  bool pagerFailed_ = false;
};

/// Decides every item. Git metadata, conflicts, excluded and skipped paths are
/// decided without asking, in every mode (git metadata is never accepted). `r` rejects (Rejected); held back is only what the
/// held-back rules keep. An accepted item below a new directory (or a
/// directory replacing a file) that was not accepted becomes Blocked: a new
/// directory reaches the host only when it was accepted itself. Interactive mode without `haveTty` fails with an error that names
/// --review=auto and --review=none. `term` is needed for Interactive only.
Result<std::vector<Decision>> decide(const std::vector<DiffItem>& items, ReviewMode mode, const ThreeWayDiff& diff,
                                     ReviewTerminal* term, bool haveTty);

}  // namespace airlock::workspace
