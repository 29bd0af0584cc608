#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/fd.h"
#include "common/interrupt.h"

extern char** environ;

namespace airlock {
namespace {

std::vector<char*> toArgv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  out.reserve(argv.size() + 1);
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

/// The PATH of the environment `envp` (NAME=value strings), else the
/// default search path.
std::string searchPath(char** envp) {
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, "PATH=", 5) == 0 && (*e)[5] != '\0') return *e + 5;
  return "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
}

/// In a spawned child: arms the parent-death signal, then checks that the
/// parent had not died already (the write end of `alive`, held only by the
/// parent, would be closed). Returns 0, or an errno when the child must
/// not run. Async-signal-safe.
int tieToParent(int aliveRead) noexcept {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
  pollfd p{aliveRead, POLLIN, 0};
  int n;
  while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR) {
  }
  if (n < 0) return errno;
  return (p.revents & (POLLHUP | POLLERR)) ? ESRCH : 0;
}

int decodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

std::string findProgram(const std::string& name) {
  // Programs run with airlock's environment (runCommand), so they are found
  // on its PATH.
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  std::stringstream ss(searchPath(environ));
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  for (const char* d : {"/usr/sbin", "/sbin"}) {
    std::string candidate = std::string(d) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<CommandOutput> runCommand(const std::vector<std::string>& argv, const std::string& cwd) {
  std::string program = findProgram(argv.at(0));
  if (program.empty()) return fail("program '{}' not found on PATH; run scripts/setup to install it", argv[0]);
  if (int sig = interruptSignal(); sig != 0)
    return std::unexpected(interruptedError(sig, fmt::format("before running '{}'", argv[0])));
  int outPipe[2], errPipe[2], execPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) || pipe2(errPipe, O_CLOEXEC) || pipe2(execPipe, O_CLOEXEC))
    return fail("cannot create pipes for '{}': {}", argv[0], errnoText(errno));
  auto args = toArgv(argv);
  // Interruptible: a group of its own, which the InterruptScope signals
  // (the three signals blocked until the child has dropped airlock's
  // handler, and until the parent has named it), ended with airlock.
  const bool ownGroup = interruptible();
  sigset_t previous;
  if (ownGroup) blockInterrupts(&previous);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    if (ownGroup) pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return fail("cannot fork to run '{}': {}", argv[0], errnoText(errno));
  }
  if (pid == 0) {
    if (ownGroup) {
      setpgid(0, 0);
      resetInterruptsInChild();
      prctl(PR_SET_PDEATHSIG, SIGINT);
      if (getppid() != parent) _exit(127);
    }
    // The command starts with no signal blocked, whatever thread ran it.
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(outPipe[1], 1);
    dup2(errPipe[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      int e = errno;
      (void)!write(execPipe[1], &e, sizeof e);
      _exit(127);
    }
    execv(program.c_str(), args.data());
    int e = errno;
    (void)!write(execPipe[1], &e, sizeof e);
    _exit(127);
  }
  if (ownGroup) {
    setpgid(pid, pid);  // also here: the child may not have run yet
    setWaitedChild(pid);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);  // a signal caught meanwhile reaches the group now
  }
  Fd outRead(outPipe[0]), errRead(errPipe[0]), execRead(execPipe[0]);
  close(outPipe[1]);
  close(errPipe[1]);
  close(execPipe[1]);
  CommandOutput result;
  pollfd fds[2] = {{outRead.get(), POLLIN, 0}, {errRead.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.stdoutText, &result.stderrText};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (ownGroup) setWaitedChild(0);
  int execErr = 0;
  if (read(execRead.get(), &execErr, sizeof execErr) == sizeof execErr)
    return fail("cannot run '{}': {}", argv[0], errnoText(execErr));
  result.exitCode = decodeStatus(status);
  return result;
}

Result<std::string> runChecked(const std::vector<std::string>& argv, const std::string& cwd) {
  auto out = runCommand(argv, cwd);
  if (!out) return std::unexpected(out.error());
  if (out->exitCode != 0) {
    std::string err = out->stderrText;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    auto nl = err.rfind('\n');
    if (nl != std::string::npos) err = err.substr(nl + 1);
    return fail("'{}' failed with exit code {}: {}", argv[0], out->exitCode, err.empty() ? "(no output)" : err);
  }
  return std::move(out->stdoutText);
}

std::vector<std::string> minimalEnvironment() { return {"PATH=" + searchPath(environ)}; }

Result<pid_t> spawnTied(const std::vector<std::string>& argv, const SpawnOptions& options) {
  // execPipe: the child's exec error, if any (closed on exec). alive: its
  // write end is held by this process only, so the child sees it closed
  // if airlock died.
  int execPipe[2], alive[2];
  if (pipe2(execPipe, O_CLOEXEC)) return fail("cannot create a pipe to start '{}': {}", argv[0], errnoText(errno));
  Fd execRead(execPipe[0]), execWrite(execPipe[1]);
  if (pipe2(alive, O_CLOEXEC)) return fail("cannot create a pipe to start '{}': {}", argv[0], errnoText(errno));
  Fd aliveRead(alive[0]), aliveWrite(alive[1]);
  auto openSink = [](const std::string& path) {
    return path.empty() ? open("/dev/null", O_WRONLY | O_CLOEXEC)
                        : open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  };
  Fd outFd(openSink(options.stdoutPath)), errFd(openSink(options.stderrPath));
  if (!outFd || !errFd) return fail("cannot open the log file for '{}': {}", argv[0], errnoText(errno));
  auto args = toArgv(argv);
  auto envStorage = options.environment.empty() ? minimalEnvironment() : options.environment;
  auto envp = toArgv(envStorage);
  // clone(2) without a new stack returns twice, like fork(2); the child
  // makes system calls only until exec.
  pid_t pid = options.newPidNamespace
                  ? static_cast<pid_t>(syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, nullptr))
                  : fork();
  if (pid < 0) return fail("cannot fork to start '{}': {}", argv[0], errnoText(errno));
  if (pid == 0) {
    auto bail = [&](int e) {
      (void)!write(execPipe[1], &e, sizeof e);
      _exit(127);
    };
    close(alive[1]);
    if (int e = tieToParent(alive[0]); e != 0) bail(e);
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(outFd.get(), 1);
    dup2(errFd.get(), 2);
    if (options.beforeExec) {
      if (int e = options.beforeExec(); e != 0) bail(e);
      if (int e = tieToParent(alive[0]); e != 0) bail(e);
    }
    // Close everything else but the exec-status pipe (it is O_CLOEXEC) and the kept fds.
    auto kept = [&](int fd) {
      for (int k : options.keepFds)
        if (k == fd) return true;
      return false;
    };
    for (int fd : options.keepFds)
      if (fcntl(fd, F_SETFD, 0) != 0) bail(errno);
    for (int fd = 3; fd < 1024; ++fd)
      if (fd != execPipe[1] && !kept(fd)) close(fd);
    execve(args[0], args.data(), envp.data());
    bail(errno);
  }
  execWrite.reset();
  aliveRead.reset();
  if (options.afterFork) {
    if (int e = options.afterFork(pid); e != 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return fail("cannot start '{}': {}", argv[0], errnoText(e));
    }
  }
  int execErr = 0;
  ssize_t n;
  while ((n = read(execRead.get(), &execErr, sizeof execErr)) < 0 && errno == EINTR) {
  }
  if (n == sizeof execErr) {
    waitpid(pid, nullptr, 0);
    return fail("cannot start '{}': {}", argv[0], errnoText(execErr));
  }
  return pid;
}

}  // namespace airlock
