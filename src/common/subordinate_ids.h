#pragma once
// The subordinate ids a user may map into user namespaces it creates
// (subuid(5), subgid(5)): what newuidmap/newgidmap and mmdebstrap's unshare
// mode allow.

#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace airlock {

/// The ids [first, first + count).
struct SubordinateRange {
  uint64_t first = 0;
  uint64_t count = 0;
};

/// The first range in `file` (the text of /etc/subuid or /etc/subgid:
/// NAME_OR_UID:FIRST:COUNT per line, subuid(5)) given to `user` (by name;
/// empty: by uid only) or `uid`, holding at least `minCount` ids.
/// Malformed lines, and ranges reaching past 2^32 - 2, match nothing.
std::optional<SubordinateRange> findSubordinateRange(const std::string& file, const std::string& user, uid_t uid,
                                                     uint64_t minCount);

/// The first id of a range no line of `files` (texts of /etc/subuid and
/// /etc/subgid) gives out: the end of the highest range, at least 100000
/// (what useradd's SUB_UID_MIN defaults to), as scripts/setup picks it.
uint64_t firstFreeSubordinateId(const std::initializer_list<const std::string*>& files);

}  // namespace airlock
