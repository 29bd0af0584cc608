#pragma once
// The guest contract (DESIGN.md, "Guest contract"): the facts host and guest
// must agree on, in one place.

#include <cstdint>

namespace airlock::guest {

inline constexpr uint32_t kAgentUid = 1000;             ///< the agent user (and group) airlock-init creates
inline constexpr const char* kAgentHome = "/home/agent";  ///< its home, on the scratch disk
inline constexpr const char* kWorkspace = "/workspace";   ///< where the workspace is mounted
/// PATH of the agent and of commands whose image sets none.
inline constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// PATH of airlock's own helper commands in the guest (mkdir, chown, cat).
inline constexpr const char* kHelperPath = "/usr/local/bin:/usr/bin:/bin";

}  // namespace airlock::guest
