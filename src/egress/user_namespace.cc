#include "egress/user_namespace.h"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <utility>
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
/// It dies with its parent (PR_SET_PDEATHSIG) and exits when `go` closes
/// without a byte; the destructor reaps it.
class GroupMapper {
 public:
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
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      // The caller is single-threaded (it is about to unshare CLONE_NEWUSER).
      // Only this end of `go` stays open here, so the parent closing its own
      // is end-of-file; every other fd airlock holds closes at exec.
      close(goPipe[1]);
      close(errPipe[0]);
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(125);
      char byte;
      ssize_t n;
      while ((n = read(goPipe[0], &byte, 1)) < 0 && errno == EINTR) {
      }
      if (n != 1 || dup2(errPipe[1], 2) < 0) _exit(126);
      execv(args[0], args.data());
      _exit(127);
    }
    close(goPipe[0]);
    close(errPipe[1]);
    GroupMapper m;
    m.go_ = Fd(goPipe[1]);
    m.errors_ = Fd(errPipe[0]);
    if (pid < 0) return std::nullopt;
    m.pid_ = pid;
    return m;
  }

  GroupMapper() = default;
  GroupMapper(GroupMapper&& o) noexcept
      : pid_(std::exchange(o.pid_, -1)), go_(std::move(o.go_)), errors_(std::move(o.errors_)) {}
  GroupMapper& operator=(GroupMapper&& o) noexcept {
    if (this != &o) {
      if (pid_ > 0) (void)finish(false);
      pid_ = std::exchange(o.pid_, -1);
      go_ = std::move(o.go_);
      errors_ = std::move(o.errors_);
    }
    return *this;
  }
  ~GroupMapper() {
    if (pid_ > 0) (void)finish(false);
  }

  /// Tells the helper to run newgidmap (or, with `run` false, to exit) and
  /// reaps it. Empty when newgidmap succeeded, else what it said.
  std::string finish(bool run) {
    if (run) {
      char byte = 1;
      if (write(go_.get(), &byte, 1) != 1) run = false;
    }
    go_.reset();
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    const int waitError = errno;
    pid_ = -1;
    std::string text(512, '\0');
    ssize_t n = read(errors_.get(), text.data(), text.size());
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (size_t nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
    if (reaped < 0) return fmt::format("cannot wait for it: {}", errnoText(waitError));
    if (run && WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
    if (!text.empty()) return text;
    return WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status)) : "killed by a signal";
  }

 private:
  pid_t pid_ = -1;
  Fd go_;      ///< write end: one byte starts newgidmap; closing it makes the helper exit
  Fd errors_;  ///< read end of newgidmap's stderr
};

/// newgidmap's command line for `pid` (gid 0 -> `gid`, gid 1 -> the first
/// of the user's subordinate gids that is not `gid`), or why there is none,
/// naming the fix.
std::variant<std::vector<std::string>, std::string> groupMapCommand(pid_t pid, uid_t uid, gid_t gid) {
  passwd* pw = getpwuid(uid);
  const std::string who = pw ? fmt::format("{} ({})", pw->pw_name, uid) : fmt::format("uid {}", uid);
  if (!pw) return fmt::format("{} has no passwd entry, which newgidmap needs", who);
  if (access(kNewgidmap, X_OK) != 0)
    return fmt::format("{} is missing: run scripts/setup (Debian package uidmap)", kNewgidmap);
  if (pw->pw_gid != gid)
    return fmt::format("airlock runs with gid {}, not {}'s login group {}, and newgidmap maps only that one: run "
                       "airlock from your login group (not under newgrp or sg)",
                       gid, pw->pw_name, pw->pw_gid);
  const std::string subgid = readFile("/etc/subgid", 1 << 20).value_or("");
  auto range = findSubordinateRange(subgid, pw->pw_name, uid, 1);
  if (range && range->first == gid && range->count < 2) range.reset();
  if (!range) {
    const std::string subuid = readFile("/etc/subuid", 1 << 20).value_or("");
    const uint64_t free = firstFreeSubordinateId({&subuid, &subgid});
    return fmt::format("{} has no subordinate gids in /etc/subgid: sudo usermod --add-subgids {}-{} {} (a range no "
                       "other user has; airlock doctor checks it)",
                       who, free, free + 65535, pw->pw_name);
  }
  const uint64_t mapped = range->first == gid ? range->first + 1 : range->first;
  return std::vector<std::string>{kNewgidmap, std::to_string(pid), "0", std::to_string(gid), "1", "1",
                                  std::to_string(mapped), "1"};
}

/// The first line of /proc/self/`name` ("" when empty or unreadable).
std::string procSelfLine(const std::string& name) {
  auto text = readFile("/proc/self/" + name, 4096);
  if (!text) return "";
  return text->substr(0, text->find('\n'));
}

/// The namespace, once made: a second call in the same process (already
/// root inside it) returns what the first one made.
std::optional<NamespaceRoot>& madeRoot() {
  static std::optional<NamespaceRoot> root;
  return root;
}

Result<NamespaceRoot> makeNamespaceRoot() {
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
  if (unshare(CLONE_NEWUSER) != 0)
    return failWith(exit_code::kEgress, "cannot create a user namespace for the VM's jail and network (unshare "
                    "CLONE_NEWUSER): {}; enable unprivileged user namespaces (sysctl "
                    "kernel.unprivileged_userns_clone=1 / user.max_user_namespaces) or run as root", errnoText(errno));
  if (auto r = writeProcFile("/proc/self/uid_map", fmt::format("0 {} 1", uid)); !r) return std::unexpected(r.error());
  if (mapper) {
    std::string failed = mapper->finish(true);
    if (failed.empty()) return root;
    // A map newgidmap wrote before failing stays (the kernel takes one write).
    if (!procSelfLine("gid_map").empty()) {
      if (procSelfLine("setgroups") != "allow")
        root.groupsLocked = fmt::format("{} mapped the gids but left setgroups denied: {}", kNewgidmap, failed);
      return root;
    }
    root.groupsLocked = fmt::format("{} refused to map a subordinate gid: {}", kNewgidmap, failed);
  }
  if (auto r = writeProcFile("/proc/self/setgroups", "deny"); !r) return std::unexpected(r.error());
  if (auto r = writeProcFile("/proc/self/gid_map", fmt::format("0 {} 1", gid)); !r) return std::unexpected(r.error());
  return root;
}

}  // namespace

Result<NamespaceRoot> becomeNamespaceRoot() {
  if (madeRoot()) return *madeRoot();
  auto root = makeNamespaceRoot();
  if (root) madeRoot() = *root;
  return root;
}

}  // namespace airlock::egress
