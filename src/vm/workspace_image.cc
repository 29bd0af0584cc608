#include "vm/workspace_image.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/subprocess.h"
#include "vm/guest_contract.h"

namespace airlock::vm {

Result<> buildWorkspaceImage(const std::string& snapshotDir, const std::string& imagePath) {
  if (findProgram("mkfs.erofs").empty())
    return failWith(exit_code::kHostNotReady, "mkfs.erofs is not installed; run scripts/setup (package erofs-utils)");
  const std::string agent = std::to_string(guest::kAgentUid);
  std::vector<std::string> argv = {"mkfs.erofs",           "--quiet",   "--preserve-mtime", "-x", "-1",
                                   "--force-uid=" + agent, "--force-gid=" + agent, imagePath, snapshotDir};
  if (auto r = runChecked(argv); !r)
    return failWith(exit_code::kHostNotReady, "cannot build the workspace image {}: {}", imagePath, r.error().message);
  // QEMU's jail uid reads it; the run directory holding it is private.
  if (::chmod(imagePath.c_str(), 0644) != 0)
    return failWith(exit_code::kHostNotReady, "cannot chmod {}: {}", imagePath, errnoText(errno));
  return {};
}

}  // namespace airlock::vm
