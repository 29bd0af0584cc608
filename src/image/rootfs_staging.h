#pragma once
// The writable tree an agent image is assembled in before mkfs.erofs: the
// base tarball unpacked, the agent user added, files written.

#include <string>
#include <string_view>

#include "common/error.h"

namespace airlock::image {

/// Unpacks the base tarball into the empty directory `root`. Owners are kept
/// when running as root; device nodes (/dev/*) are left out: the guest mounts
/// devtmpfs there.
Result<> unpackBase(const std::string& tarball, const std::string& root);

/// Adds user and group `agent` (uid/gid 1000, home /home/agent, /bin/bash) to
/// root/etc/passwd, group, shadow and gshadow where those exist, unless a user
/// or group with that name or id is already there, and creates its home
/// (owned by 1000:1000 when running as root).
Result<> addAgentUser(const std::string& root);

/// Writes `content` to root/`relPath` with permission bits `mode`, creating
/// parent directories (0755).
Result<> writeRootFile(const std::string& root, std::string_view relPath, std::string_view content, unsigned mode);

}  // namespace airlock::image
