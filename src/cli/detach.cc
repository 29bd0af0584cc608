#include "cli/detach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "cli/report.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "session/session.h"

namespace airlock::cli {

void addDetachFlags(CLI::App& cmd, DetachFlags& flags) {
  cmd.add_flag("-d,--detach", flags.detach,
               "Run in the background: print the session's name and return; the changes wait for `airlock review "
               "NAME` (see `airlock ls`, `attach`, `logs`, `stop`)");
  cmd.add_option("--name", flags.name, "The session's name (default: the agent's name and a short id)")
      ->check([](const std::string& name) -> std::string {
        return session::validSessionName(name) ? "" : "'" + name + "' is not a session name: use 1-64 letters, "
                                                      "digits, '_', '.' or '-', starting with a letter or digit";
      });
  cmd.add_flag("--supervise", flags.supervise)->group("");  // the detached session's own process
}

int startDetached(const std::vector<std::string>& invocation) {
  if (invocation.size() < 2) return reportError(Error{"nothing to run", exit_code::kInternal});
  std::vector<std::string> args = {invocation[0], invocation[1], "--supervise"};
  args.insert(args.end(), invocation.begin() + 2, invocation.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Ctrl-C (or SIGTERM, SIGHUP) while it starts is passed on: the
  // supervisor stops preparing, removes what it made and says so, as a
  // foreground run does; a second one makes it quit at once. The supervisor
  // is in a session of its own, so only this process hears the terminal.
  // A signal ignored here (nohup) stays ignored. Blocked before the fork:
  // one that comes meanwhile waits here instead of ending this process and
  // leaving the supervisor to start a session nobody was told of (the
  // supervisor keeps them blocked too: session/supervisor.h).
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) sigaddset(&mask, sig);
  }
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  int relay[2];
  if (::pipe2(relay, O_CLOEXEC) != 0) return reportError(Error{"cannot make a pipe", exit_code::kInternal});
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return reportError(Error{"cannot start the session's supervisor: fork failed", exit_code::kInternal});
  if (pid == 0) {
    // The supervisor: its own session (no terminal, no job control of
    // the shell that started it), stdin and stdout on /dev/null, stderr
    // to the relay until its command runs.
    ::setsid();
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(relay[1], 2);
    ::execv("/proc/self/exe", argv.data());
    const char msg[] = "airlock: cannot start the session's supervisor (/proc/self/exe)\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(exit_code::kInternal);
  }
  ::close(relay[1]);
  Fd in(relay[0]);
  Fd signals(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  std::string pending, name;
  char buf[4096];
  const std::string marker = session::kStartedMarker;
  int interrupted = 0;
  while (name.empty()) {
    pollfd fds[2] = {{in.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (::read(signals.get(), &info, sizeof info) == sizeof info) {
        ::kill(pid, static_cast<int>(info.ssi_signo));
        if (interrupted != 0) {
          std::fprintf(stderr, "airlock: interrupted again: no longer waiting for the session's supervisor (pid %d), "
                       "told twice to stop; `airlock ls -a` shows what is left\n", pid);
          return 128 + interrupted;
        }
        interrupted = static_cast<int>(info.ssi_signo);
      }
    }
    if (!fds[0].revents) continue;
    ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t eol;
    while (name.empty() && (eol = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, eol);
      pending.erase(0, eol + 1);
      if (line.starts_with(marker)) name = line.substr(marker.size());
      else std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  if (!name.empty() && interrupted != 0) {
    // It came as the command started: the supervisor stops the session as
    // `airlock stop` does, and its changes are kept.
    std::fprintf(stderr,
                 "airlock: interrupted as session %s started; it is stopping, and its changes wait for "
                 "`airlock review %s`\n",
                 name.c_str(), name.c_str());
    return 128 + interrupted;
  }
  if (!name.empty()) {
    std::printf("%s\n", name.c_str());
    return 0;  // the supervisor goes on; the relay closes with this process
  }
  if (!pending.empty()) std::fprintf(stderr, "%s\n", pending.c_str());
  int status = 0;
  if (::waitpid(pid, &status, 0) == pid) {
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return WEXITSTATUS(status);
    if (WIFSIGNALED(status) && interrupted != 0) {
      std::fprintf(stderr, "airlock: interrupted (%s) before the session started; nothing was kept\n",
                   sigabbrev_np(interrupted));
      return 128 + interrupted;
    }
  }
  return reportError(Error{"the session's supervisor ended before its command started", exit_code::kInternal});
}

int superviseSession(session::Runner& runner, session::DetachedUi& ui, bool exportChanges) {
  auto failed = [&](const Error& e) {
    if (!runner.sessionDir().empty()) session::appendSessionLog(runner.sessionDir(), "error: " + e.message);
    return reportError(e);
  };
  if (auto r = runner.prepare(); !r) {
    // Said on `run -d`'s terminal; nothing ran, so nothing is kept (an
    // interrupted runner removes its directory itself).
    if (const std::string dir = runner.sessionDir(); !dir.empty() && !runner.discarded()) {
      session::releaseSessionName(dir.substr(0, dir.rfind("/sessions/")), dir);
      (void)removeTree(dir);
    }
    return reportError(r.error());
  }
  ui.setSessionDir(runner.sessionDir(), runner.sessionName());
  auto code = runner.runCommand();
  if (!code) return failed(code.error());
  if (exportChanges) {
    if (auto r = runner.keepForReview(); !r) return failed(r.error());
  } else {
    session::appendSessionLog(runner.sessionDir(), fmt::format("exit {}", *code));
  }
  return *code;
}

}  // namespace airlock::cli
