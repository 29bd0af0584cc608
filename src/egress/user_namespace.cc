#include "egress/user_namespace.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/subordinate_ids.h"

namespace airlock::egress {

namespace {

constexpr const char* kNewgidmap = "/usr/bin/newgidmap";

Result<> writeProcFile(const char* path, const std::string& text) {
  Fd fd(open(path, O_WRONLY | O_CLOEXEC));
  if (!fd || !writeAll(fd.get(), text))
    return failWith(exit_code::kEgress, "cannot write {} for the user namespace: {}", path, errnoText(errno));
  return {};
}

/// A forked process, still in the host's user namespace, that runs
/// newgidmap on its parent once told to (a byte on `go`), its stderr kept.
struct GroupMapper {
  pid_t pid = -1;
  Fd go;      ///< write end: one byte starts newgidmap; closing it makes the helper exit
  Fd stderr;  ///< read end of newgidmap's stderr

  /// Starts the helper for `argv`; nullopt when fork or pipe fails.
  static std::optional<GroupMapper> start(const std::vector<std::string>& argv) {
    int goPipe[2], errPipe[2];
    if (pipe2(goPipe, O_CLOEXEC) != 0) return std::nullopt;
    if (pipe2(errPipe, O_CLOEXEC) != 0) {
      close(goPipe[0]);
      close(goPipe[1]);
      return std::nullopt;
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      // The caller is single-threaded (it is about to unshare CLONE_NEWUSER).
      char byte;
      if (dup2(errPipe[1], 2) < 0 || read(goPipe[0], &byte, 1) != 1) _exit(126);
      execv(args[0], args.data());
      _exit(127);
    }
    close(goPipe[0]);
    close(errPipe[1]);
    GroupMapper m;
    m.go = Fd(goPipe[1]);
    m.stderr = Fd(errPipe[0]);
    if (pid < 0) {
      m.go.reset();
      return std::nullopt;
    }
    m.pid = pid;
    return m;
  }

  /// Tells the helper to run (or, with `run` false, to exit) and waits for
  /// it. Empty when newgidmap succeeded, else its first line of stderr.
  std::string finish(bool run) {
    if (run) {
      char byte = 1;
      if (write(go.get(), &byte, 1) != 1) run = false;
    }
    go.reset();
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string text(512, '\0');
    ssize_t n = read(stderr.get(), text.data(), text.size());
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (size_t nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
    if (run && WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
    if (!text.empty()) return text;
    return WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status)) : "killed by a signal";
  }
};

/// newgidmap's command line for `pid` (gid 0 -> `gid`, gid 1 -> the
/// user's first subordinate gid), or why there is none, naming the fix.
std::variant<std::vector<std::string>, std::string> groupMapCommand(pid_t pid, uid_t uid, gid_t gid) {
  passwd* pw = getpwuid(uid);
  const std::string who = pw ? fmt::format("{} ({})", pw->pw_name, uid) : fmt::format("uid {}", uid);
  if (!pw) return fmt::format("{} has no passwd entry, which newgidmap needs", who);
  if (access(kNewgidmap, X_OK) != 0)
    return fmt::format("{} is missing: run scripts/setup (Debian package uidmap)", kNewgidmap);
  if (pw->pw_gid != gid)
    return fmt::format("airlock runs with gid {}, not {}'s login group {} (newgidmap maps only that one)", gid,
                       pw->pw_name, pw->pw_gid);
  auto file = readFile("/etc/subgid", 1 << 20);
  auto range = file ? findSubordinateRange(*file, pw->pw_name, uid, 1) : std::nullopt;
  if (!range)
    return fmt::format("{} has no subordinate gids in /etc/subgid: run scripts/setup as that user (sudo usermod "
                       "--add-subgids 100000-165535 {})",
                       who, pw->pw_name);
  return std::vector<std::string>{kNewgidmap,           std::to_string(pid), "0", std::to_string(gid), "1", "1",
                                  std::to_string(range->first), "1"};
}

}  // namespace

Result<NamespaceRoot> becomeNamespaceRoot() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (uid == 0) return NamespaceRoot{};
  NamespaceRoot root;
  std::optional<GroupMapper> mapper;
  if (getgroups(0, nullptr) > 0) {
    auto command = groupMapCommand(getpid(), uid, gid);
    if (auto* reason = std::get_if<std::string>(&command)) {
      root.groupsLocked = *reason;
    } else {
      mapper = GroupMapper::start(std::get<std::vector<std::string>>(command));
      if (!mapper) root.groupsLocked = fmt::format("cannot start {}: {}", kNewgidmap, errnoText(errno));
    }
  }
  if (unshare(CLONE_NEWUSER) != 0) {
    int e = errno;
    if (mapper) mapper->finish(false);
    return failWith(exit_code::kEgress, "cannot create a user namespace for the VM's jail and network (unshare "
                    "CLONE_NEWUSER): {}; enable unprivileged user namespaces (sysctl "
                    "kernel.unprivileged_userns_clone=1 / user.max_user_namespaces) or run as root", errnoText(e));
  }
  if (auto r = writeProcFile("/proc/self/uid_map", fmt::format("0 {} 1", uid)); !r) {
    if (mapper) mapper->finish(false);
    return std::unexpected(r.error());
  }
  if (mapper) {
    std::string failed = mapper->finish(true);
    if (failed.empty()) return root;
    root.groupsLocked = fmt::format("{} refused to map a subordinate gid: {}", kNewgidmap, failed);
  }
  if (auto r = writeProcFile("/proc/self/setgroups", "deny"); !r) return std::unexpected(r.error());
  if (auto r = writeProcFile("/proc/self/gid_map", fmt::format("0 {} 1", gid)); !r) return std::unexpected(r.error());
  return root;
}

}  // namespace airlock::egress
