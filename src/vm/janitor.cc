#include "vm/janitor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>
#include <vector>

#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"

namespace airlock::vm {

Result<Janitor> Janitor::start(const std::string& selfExe, int heldLock) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return fail("cannot create the janitor pipe: {}", errnoText(errno));
  auto env = minimalEnvironment();
  const char* envp[] = {env[0].c_str(), nullptr};
  pid_t pid = fork();
  if (pid < 0) return fail("cannot start the janitor: {}", errnoText(errno));
  if (pid == 0) {
    // Double fork: the janitor must not be our child (no zombie, no SIGCHLD).
    if (fork() != 0) _exit(0);
    setsid();
    // Out of the way first (either may be 3 or 4), then to 3 and 4 without FD_CLOEXEC.
    const int pipeFd = fcntl(p[0], F_DUPFD_CLOEXEC, 10);
    const int lockFd = heldLock >= 0 ? fcntl(heldLock, F_DUPFD_CLOEXEC, 10) : -1;
    dup2(pipeFd, 3);
    if (lockFd >= 0) dup2(lockFd, 4);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    for (int fd = lockFd >= 0 ? 5 : 4; fd < 1024; ++fd) close(fd);
    const char* argv[] = {selfExe.c_str(), "__janitor", nullptr};
    execve(selfExe.c_str(), const_cast<char**>(argv), const_cast<char**>(envp));
    _exit(127);
  }
  ::close(p[0]);
  waitpid(pid, nullptr, 0);
  return Janitor(Fd(p[1]));
}

void Janitor::watchPid(pid_t pid) { writeAll(fd_.get(), "pid " + std::to_string(pid) + "\n"); }

void Janitor::watchDir(const std::string& path) { writeAll(fd_.get(), "dir " + path + "\n"); }

void Janitor::holdLock(const std::string& path) { writeAll(fd_.get(), "lock " + path + "\n"); }

void Janitor::keepFile(const std::string& path, const std::string& keptAs) {
  writeAll(fd_.get(), "keep " + path + "\n" + "as " + keptAs + "\n");
}

void Janitor::clear() {
  if (fd_) writeAll(fd_.get(), "clear\n");
  fd_.reset();
}

int runJanitor(int fd) {
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  std::string input;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    input.append(buf, static_cast<size_t>(n));
  }
  std::vector<pid_t> pids;
  std::vector<std::string> dirs;
  std::vector<std::pair<std::string, std::string>> kept;  // path, kept as
  std::vector<std::string> locks;
  std::stringstream ss(input);
  std::string line;
  while (std::getline(ss, line)) {
    if (line == "clear") {
      pids.clear();
      dirs.clear();
      kept.clear();
      locks.clear();
    } else if (line.rfind("pid ", 0) == 0) {
      pids.push_back(static_cast<pid_t>(std::stol(line.substr(4))));
    } else if (line.rfind("dir ", 0) == 0) {
      dirs.push_back(line.substr(4));
    } else if (line.rfind("lock ", 0) == 0) {
      locks.push_back(line.substr(5));
    } else if (line.rfind("keep ", 0) == 0) {
      kept.emplace_back(line.substr(5), "");
    } else if (line.rfind("as ", 0) == 0 && !kept.empty()) {
      kept.back().second = line.substr(3);
    }
  }
  std::vector<Fd> held;  // released when the janitor exits, its work done
  for (const auto& path : locks) {
    Fd lock(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (lock && ::flock(lock.get(), LOCK_EX) == 0) held.push_back(std::move(lock));
  }
  for (pid_t pid : pids) kill(pid, SIGKILL);
  // Wait (bounded) for the processes to be gone before removing their files.
  for (int i = 0; i < 200; ++i) {
    bool any = false;
    for (pid_t pid : pids) any |= kill(pid, 0) == 0;
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const auto& [path, as] : kept)
    if (!as.empty()) (void)::rename(path.c_str(), as.c_str());
  for (const auto& dir : dirs) (void)removeTree(dir);
  return 0;
}

}  // namespace airlock::vm
