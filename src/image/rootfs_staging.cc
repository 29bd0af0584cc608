#include "image/rootfs_staging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "vm/guest_contract.h"

namespace airlock::image {
namespace {

/// True when a line of the colon-separated file `text` has `name` in its
/// first field or, when set, `id` in its third.
bool hasEntry(const std::string& text, std::string_view name, std::optional<unsigned> id) {
  const std::string idText = id ? std::to_string(*id) : std::string();
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    if (line.substr(0, c1) == name) return true;
    if (!id) continue;
    size_t c2 = line.find(':', c1 + 1);
    size_t c3 = c2 == std::string_view::npos ? c2 : line.find(':', c2 + 1);
    if (c3 != std::string_view::npos && line.substr(c2 + 1, c3 - c2 - 1) == idText) return true;
  }
  return false;
}

/// Appends `line` to root/etc/`file` unless it has an entry for the agent
/// (by name, or by `id` when set); a missing file is an error unless `optional`.
Result<> appendEntry(const std::string& root, const std::string& file, const std::string& line, bool optional,
                     std::optional<unsigned> id) {
  const std::string path = root + "/etc/" + file;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (optional) return {};
    return failWith(exit_code::kImage, "the base rootfs has no /etc/{} ({})", file, errnoText(errno));
  }
  auto text = readFile(path, 16 << 20);
  if (!text) return failWith(exit_code::kImage, "{}", text.error().message);
  if (hasEntry(*text, guest::kAgentUser, id)) return {};
  if (!text->empty() && text->back() != '\n') *text += '\n';
  *text += line + "\n";
  if (auto r = writeFileAtomic(path, *text, st.st_mode & 07777); !r)
    return failWith(exit_code::kImage, "{}", r.error().message);
  if (::chmod(path.c_str(), st.st_mode & 07777) != 0 ||
      (::geteuid() == 0 && ::chown(path.c_str(), st.st_uid, st.st_gid) != 0))
    return failWith(exit_code::kImage, "cannot restore the owner and mode of {}: {}", path, errnoText(errno));
  return {};
}

}  // namespace

Result<> unpackBase(const std::string& tarball, const std::string& root) {
  std::vector<std::string> argv = {"tar", "--extract", "--file", tarball, "--directory", root,
                                   "--numeric-owner", "--exclude=./dev/*"};
  if (::geteuid() == 0) {
    argv.insert(argv.end(), {"--same-owner", "--preserve-permissions", "--xattrs", "--xattrs-include=*"});
  }
  auto run = runCommand(argv);
  if (!run) return failWith(exit_code::kImage, "cannot start tar: {}", run.error().message);
  if (run->exitCode != 0)
    return failWith(exit_code::kImage, "cannot unpack the base rootfs {}: {}; remove it to rebuild it", tarball,
                    run->stderrText.substr(0, run->stderrText.find('\n')));
  return {};
}

Result<> addAgentUser(const std::string& root) {
  const std::string id = std::to_string(guest::kAgentUid);
  const std::string user(guest::kAgentUser), home(guest::kAgentHome);
  if (auto r = appendEntry(root, "passwd", fmt::format("{}:x:{}:{}:airlock agent:{}:/bin/bash", user, id, id, home),
                           false, guest::kAgentUid);
      !r)
    return r;
  if (auto r = appendEntry(root, "group", fmt::format("{}:x:{}:", user, id), false, guest::kAgentUid); !r) return r;
  if (auto r = appendEntry(root, "shadow", fmt::format("{}:*:19000:0:99999:7:::", user), true, std::nullopt); !r)
    return r;
  if (auto r = appendEntry(root, "gshadow", fmt::format("{}:!::", user), true, std::nullopt); !r) return r;
  const std::string homeDir = root + home;
  if (auto r = makeDirs(homeDir, 0755); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  if (::geteuid() == 0 && ::chown(homeDir.c_str(), guest::kAgentUid, guest::kAgentUid) != 0)
    return failWith(exit_code::kImage, "cannot chown {}: {}", homeDir, errnoText(errno));
  return {};
}

Result<> writeRootFile(const std::string& root, std::string_view relPath, std::string_view content, unsigned mode) {
  const std::string path = root + "/" + std::string(relPath);
  if (auto r = makeDirs(path.substr(0, path.rfind('/')), 0755); !r)
    return failWith(exit_code::kImage, "{}", r.error().message);
  if (auto r = writeFileAtomic(path, content, mode); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  if (::chmod(path.c_str(), mode) != 0)
    return failWith(exit_code::kImage, "cannot chmod {}: {}", path, errnoText(errno));
  return {};
}

}  // namespace airlock::image
