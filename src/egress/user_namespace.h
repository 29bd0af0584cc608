#pragma once
// airlock's own user namespace, for a caller other than root: what lets it
// build QEMU's jail (vm/jail.h) and the session's network namespace
// (netns.h) without any privilege on the host.

#include <string>

#include "common/error.h"

namespace airlock::egress {

/// What becomeNamespaceRoot made.
struct NamespaceRoot {
  /// Empty when processes in the namespace may drop their supplementary
  /// groups (setgroups(2)), as QEMU 7.2's virtiofsd must: airlock runs as
  /// root, the user has none, or newgidmap mapped one of the user's
  /// subordinate gids (subgid(5)), which leaves setgroups "allow"
  /// (user_namespaces(7)). Otherwise why not, naming the fix.
  std::string groupsLocked;
};

/// For an unprivileged caller (euid != 0): becomes root of a new user
/// namespace in which its own uid and gid are 0, so files it creates stay
/// owned by the caller. A caller with supplementary groups (every login
/// has some; /dev/kvm's group among them) keeps them, and gets gid 1
/// mapped to the first of its subordinate gids by /usr/bin/newgidmap, run
/// from a helper forked before unshare (a setuid program does not gain its
/// privilege inside the namespace); without a range or newgidmap, or when
/// newgidmap refuses, the namespace maps only the caller's own ids with
/// setgroups "deny", and groupsLocked says why. Must run before the process
/// starts its first thread (unshare(2) refuses CLONE_NEWUSER in a
/// multithreaded process). No-op for root. Errors carry kEgress and name
/// what is missing.
Result<NamespaceRoot> becomeNamespaceRoot();

}  // namespace airlock::egress
