#pragma once
// Nothing is lost: changes that were not flushed (rejected, held back,
// conflicting, failed) are kept in <session>/pending as
//   changes.tar    an OCI layer tar that ChangeSet::fromTar() reads back,
//   changes.patch  the unified diffs, for reading: the review's text, control
//                  characters escaped (changes.tar holds the exact bytes;
//                  `airlock review -s` applies them),
//   decisions      one line per item: "<decision> <percent-encoded path>".

#include <string>
#include <vector>

#include "common/error.h"
#include "workspace/diff.h"
#include "workspace/review.h"

namespace airlock::workspace {

/// Writes the items whose `keep` flag is set to <sessionDir>/pending
/// (replacing an earlier one). Returns the directory written, or "" when
/// nothing was kept. `decisions` is parallel to `items`. Skipped items are
/// never kept (they have no content).
Result<std::string> keepPending(const std::vector<DiffItem>& items, const std::vector<Decision>& decisions,
                                const std::vector<bool>& keep, const ThreeWayDiff& diff,
                                const std::string& sessionDir);

}  // namespace airlock::workspace
