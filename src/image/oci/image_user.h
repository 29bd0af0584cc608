#pragma once
// Resolves an image config's "User" ("name", "uid", "name:group", "uid:gid")
// to numbers with the image's own /etc/passwd and /etc/group, read inside the
// staged tree (symlinks resolve within it).

#include <cstdint>
#include <string>

#include "common/error.h"

namespace airlock::image::oci {

/// A numeric user and group.
struct ImageUser {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

/// Resolves `user` against the tree at `rootFd`. Empty means root (0:0). A
/// numeric uid missing from /etc/passwd gets gid 0, like docker. Unknown
/// names are an error (kImage) naming the user and the image file.
Result<ImageUser> resolveImageUser(int rootFd, const std::string& user);

}  // namespace airlock::image::oci
