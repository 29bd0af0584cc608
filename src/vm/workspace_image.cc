#include "vm/workspace_image.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/subprocess.h"
#include "vm/console_log.h"
#include "vm/guest_contract.h"

namespace airlock::vm {

Result<> buildWorkspaceImage(const std::string& snapshotDir, const std::string& imagePath) {
  std::string mkfs = findProgram("mkfs.erofs");
  if (mkfs.empty())
    return failWith(exit_code::kHostNotReady, "mkfs.erofs is not installed; run scripts/setup (package erofs-utils)");
  const std::string agent = std::to_string(guest::kAgentUid), log = imagePath + ".log";
  // Chunk-based files (4 KiB chunks) keep holes: a sparse file stays sparse.
  std::vector<std::string> argv = {mkfs, "--quiet", "--preserve-mtime", "-x", "-1", "--chunksize=4096",
                                   "--force-uid=" + agent, "--force-gid=" + agent, imagePath, snapshotDir};
  // Tied to airlock: killed with it, never left writing a deleted image.
  SpawnOptions options{log, log, {}, {}, {}};
  auto pid = spawnTied(argv, options);
  int status = 0;
  if (pid) waitpid(*pid, &status, 0);
  if (!pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    auto said = tailLines(log, 1);
    std::string why = !pid ? pid.error().message : said.empty() ? "mkfs.erofs failed" : said.back();
    (void)::unlink(log.c_str());
    return failWith(exit_code::kHostNotReady, "cannot build the workspace image {}: {}", imagePath, why);
  }
  (void)::unlink(log.c_str());
  // QEMU's jail uid reads it; the run directory holding it is private.
  if (::chmod(imagePath.c_str(), 0644) != 0)
    return failWith(exit_code::kHostNotReady, "cannot chmod {}: {}", imagePath, errnoText(errno));
  return {};
}

}  // namespace airlock::vm
