#pragma once
// A model of the workspace as it may look after a flush: the baseline
// manifest with every reviewable change of the agent as a second possible
// state of its path. A path with two states is "either" (the reviewer may
// accept or reject it, and a deleted baseline symlink stays possible), so
// every question below is answered for all combinations at once. Held-back
// status and symlink escapes are judged here, after resolving every hop,
// never on the literal path. All work is bounded: what exceeds a bound is
// reported as such (callers hold it back).

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workspace/diff.h"
#include "workspace/manifest.h"

namespace airlock::workspace {

/// One possible state of a path.
struct TreeNode {
  bool exists = false;
  EntryType type = EntryType::File;
  std::string target;  ///< symlinks
};

/// Where a path or a symlink target ends up.
struct Resolution {
  enum class Kind {
    Inside,        ///< an existing entry (or the root) at `path`
    Missing,       ///< nothing there (`path` is where the walk stopped); after `hops` symlinks
    Outside,       ///< an absolute target, or ".." above the workspace root
    Unresolvable,  ///< a loop, more than kMaxHops symlinks, a work bound, or a path the model
                   ///< lacks that the host knows (setKnownElsewhere)
  };
  Kind kind = Kind::Inside;
  std::string path;
  int hops = 0;  ///< symlinks followed
  std::vector<std::string> via;    ///< the symlinks followed, in order
  std::vector<std::string> exact;  ///< those of `via` reached with nothing left to resolve (the start names them)
};

/// The final-tree model. Paths are normalized relative paths ("" = root).
class FinalTree {
 public:
  static constexpr int kMaxHops = 40;        ///< symlinks per resolution, as Linux
  static constexpr size_t kMaxWork = 4096;   ///< resolver steps per question
  static constexpr size_t kMaxAliases = 256; ///< alias paths per item
  /// Resolver work for the whole tree (every question together): steps plus
  /// the path components each step copies. Once spent, every later
  /// resolution is Unresolvable and exhausted() is true.
  static constexpr size_t kMaxTotalWork = 2'000'000;

  /// The baseline as the only state of every path.
  explicit FinalTree(const Manifest& baseline);

  /// Adds `agent` as a possible state of `path` (kept next to the baseline one).
  void addVariant(const std::string& path, const Side& agent);

  /// Paths missing from the model for which `known` holds (kept out of the
  /// snapshot, or present on the live host) make every resolution that
  /// reaches them Unresolvable: what lies there is not modelled. Asked at most
  /// once per path. Call before finish().
  void setKnownElsewhere(std::function<bool(const std::string&)> known);

  /// Indexes every symlink by where it resolves; call once after the last addVariant().
  void finish();

  /// True once kMaxTotalWork is spent. When it happened in finish(), the
  /// index is incomplete: aliases() may miss names (callers hold everything back).
  bool exhausted() const { return spent_ > kMaxTotalWork; }

  /// Every outcome of resolving `rel` (following a final symlink too).
  std::vector<Resolution> resolve(std::string_view rel) const;

  /// Every outcome of a symlink at `linkPath` with `target`.
  std::vector<Resolution> resolveLink(std::string_view linkPath, std::string_view target) const;

  /// Every path (no '.' or '..' components) that names `rel` or lies below a
  /// path naming one of its ancestors, `rel` first. False when there are more
  /// than kMaxAliases (`out` then holds the first ones). With `passed`, also
  /// the symlinks each alias's resolution passes (parallel to `out`).
  bool aliases(std::string_view rel, std::vector<std::string>& out,
               std::vector<std::vector<const std::string*>>* passed = nullptr) const;

  /// The symlinks passed by some name of an existing entry for which `pred`
  /// holds (the names aliases() gives, beyond the entry's own path). Clears
  /// `complete` when some entry has more than kMaxAliases names or all names
  /// together exceed kMaxWork * 64 (callers then treat every symlink
  /// as passed). O(entries) when few links alias them.
  std::set<std::string, std::less<>> linksPassedBy(const std::function<bool(const std::string&)>& pred,
                                                   bool& complete) const;

  /// The possible states of `rel` (a missing path: one absent state).
  const std::vector<TreeNode>& states(std::string_view rel) const;

  /// True when some path strictly below `dir` may exist: then `dir` exists as
  /// a directory too, whether or not a tar declared it.
  bool mayHaveEntriesBelow(std::string_view dir) const;

 private:
  std::vector<Resolution> walk(std::string_view dir, std::string_view rest) const;

  bool knownElsewhere(const std::string& path) const;

  std::map<std::string, std::vector<TreeNode>, std::less<>> nodes_;
  std::function<bool(const std::string&)> known_;
  mutable std::map<std::string, bool, std::less<>> knownCache_;
  mutable size_t spent_ = 0;
  /// One symlink that names a path: it resolves there, passing `via`.
  struct Naming {
    std::string link;
    std::vector<std::string> via;
  };
  /// path -> symlinks with an Inside outcome there, or naming that symlink exactly.
  std::map<std::string, std::vector<Naming>, std::less<>> linksTo_;
  /// symlink path -> its outcomes (all states).
  std::map<std::string, std::vector<Resolution>, std::less<>> linkOutcomes_;
};

}  // namespace airlock::workspace
