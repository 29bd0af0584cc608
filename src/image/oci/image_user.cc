#include "image/oci/image_user.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <sstream>
#include <vector>

#include "common/exit_codes.h"
#include "common/fd.h"

namespace airlock::image::oci {
namespace {

// Lines of /etc/<name> in the tree, split at ':'; empty when the file is absent.
std::vector<std::vector<std::string>> readTable(int rootFd, const char* rel) {
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  Fd fd(static_cast<int>(::syscall(SYS_openat2, rootFd, rel, &how, sizeof how)));
  std::vector<std::vector<std::string>> rows;
  if (!fd) return rows;
  std::string text;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 && text.size() < (8 << 20)) text.append(buf, static_cast<size_t>(n));
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::istringstream ls(line);
    std::string f;
    while (std::getline(ls, f, ':')) fields.push_back(f);
    if (fields.size() >= 4) rows.push_back(std::move(fields));
  }
  return rows;
}

std::optional<uint32_t> number(const std::string& s) {
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

Result<ImageUser> resolveImageUser(int rootFd, const std::string& user) {
  ImageUser out;
  if (user.empty()) return out;
  auto colon = user.find(':');
  std::string u = user.substr(0, colon);
  std::string g = colon == std::string::npos ? "" : user.substr(colon + 1);
  bool gidFromPasswd = g.empty();
  if (auto n = number(u)) {
    out.uid = *n;
    for (const auto& row : readTable(rootFd, "etc/passwd"))
      if (number(row[2]) == *n && gidFromPasswd) out.gid = number(row[3]).value_or(0);
  } else {
    bool found = false;
    for (const auto& row : readTable(rootFd, "etc/passwd")) {
      if (row[0] != u) continue;
      auto uid = number(row[2]);
      auto gid = number(row[3]);
      if (!uid || !gid) break;
      out = {*uid, *gid};
      found = true;
      break;
    }
    if (!found) return failWith(exit_code::kImage, "the image runs as user '{}', which its /etc/passwd does not list", u);
  }
  if (gidFromPasswd) return out;
  if (auto n = number(g)) {
    out.gid = *n;
    return out;
  }
  for (const auto& row : readTable(rootFd, "etc/group"))
    if (row.size() >= 3 && row[0] == g)
      if (auto gid = number(row[2])) {
        out.gid = *gid;
        return out;
      }
  return failWith(exit_code::kImage, "the image runs as group '{}', which its /etc/group does not list", g);
}

}  // namespace airlock::image::oci
