#include "image/tar_member.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/subprocess.h"

namespace airlock::image {

Result<> extractTarMember(const std::string& tarball, const std::string& member, const std::string& dest,
                          const std::string& workDir, unsigned mode, std::string_view hint) {
  auto scratch = TempDir::create(workDir, "tar-");
  if (!scratch) return std::unexpected(scratch.error());
  auto run = runCommand({"tar", "--extract", "--gzip", "--file", tarball, "--directory", scratch->path(),
                         "--no-same-owner", "--no-same-permissions", "--", member});
  if (!run) return failWith(exit_code::kImage, "cannot start tar: {}", run.error().message);
  if (run->exitCode != 0)
    return failWith(exit_code::kImage, "{} has no file {} (tar: {}); {}", tarball, member,
                    run->stderrText.substr(0, run->stderrText.find('\n')), hint);
  const std::string extracted = scratch->path() + "/" + member;
  struct stat st {};
  if (::lstat(extracted.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return failWith(exit_code::kImage, "{} in {} is not a regular file; {}", member, tarball, hint);
  if (::chmod(extracted.c_str(), mode) != 0)
    return failWith(exit_code::kImage, "cannot chmod {}: {}", extracted, errnoText(errno));
  if (::rename(extracted.c_str(), dest.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot move {} to {}: {}", extracted, dest, errnoText(errno));
  return {};
}

}  // namespace airlock::image
