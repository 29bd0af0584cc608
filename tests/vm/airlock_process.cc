#include "airlock_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace airlock::test {
namespace {

void applyEnv(const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
}

std::vector<char*> argvOf(std::vector<std::string>& storage) {
  std::vector<char*> out;
  for (auto& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string airlockBinary() { return AIRLOCK_BINARY; }

ProcessResult runAirlock(const std::vector<std::string>& args, const std::string& input,
                         const std::map<std::string, std::string>& env, int timeoutSeconds) {
  std::vector<std::string> storage = {airlockBinary()};
  storage.insert(storage.end(), args.begin(), args.end());
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    applyEnv(env);
    auto argv = argvOf(storage);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);
  ProcessResult result;
  size_t written = 0;
  int inFd = in[1];
  if (input.empty()) {
    close(inFd);
    inFd = -1;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  int open = 2;
  char buf[65536];
  while (open > 0) {
    pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {inFd, POLLOUT, 0}};
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0 || poll(fds, 3, left) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      result.exitCode = -1;
      return result;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        (i == 0 ? out[0] : err[0]) = -1;
        --open;
      }
    }
    if (inFd >= 0 && fds[2].revents) {
      ssize_t n = write(inFd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 || written == input.size()) {
        close(inFd);
        inFd = -1;
      }
    }
  }
  if (inFd >= 0) close(inFd);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

pid_t startAirlock(const std::vector<std::string>& args, const std::string& outPath,
                   const std::map<std::string, std::string>& env, int stdinFd) {
  std::vector<std::string> storage = {airlockBinary()};
  storage.insert(storage.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in = stdinFd >= 0 ? stdinFd : open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    applyEnv(env);
    auto argv = argvOf(storage);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

std::vector<pid_t> processesNamed(const std::string& program, const std::string& needle) {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::string cmdline = slurp("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    auto slash = argv0.rfind('/');
    if ((slash == std::string::npos ? argv0 : argv0.substr(slash + 1)) != program) continue;
    // A jailed QEMU names only jail paths; its stdout is its log in the run directory.
    std::error_code ec;
    std::string out = std::filesystem::read_symlink("/proc/" + std::string(e->d_name) + "/fd/1", ec).string();
    if (cmdline.find(needle) != std::string::npos || out.find(needle) != std::string::npos) pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace airlock::test
