#include "airlock_process.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
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

/// In a forked child: the environment and identity `as` asks for (nothing
/// without it). Exits 120 when the identity cannot be taken.
void becomeInvoker(const TestUser* as, const std::map<std::string, std::string>& env) {
  if (as) {
    clearenv();
    applyEnv(as->env());
  }
  applyEnv(env);
  const gid_t groups[] = {TestUser::kUid};
  if (as && (setgroups(1, groups) != 0 || setresgid(TestUser::kUid, TestUser::kUid, TestUser::kUid) != 0 ||
             setresuid(TestUser::kUid, TestUser::kUid, TestUser::kUid) != 0))
    _exit(120);
}

/// Mirrors the tree `from` at `to`: directories made and owned by `uid`,
/// files hard-linked (copied when linking fails), symlinks copied; lock
/// files skipped.
void seedTree(const std::filesystem::path& from, const std::filesystem::path& to, uid_t uid) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(to);
  chown(to.c_str(), uid, uid);
  for (const auto& entry : fs::directory_iterator(from, ec)) {
    const fs::path target = to / entry.path().filename();
    if (entry.path().filename() == ".lock") continue;
    if (entry.is_symlink(ec)) {
      fs::copy_symlink(entry.path(), target, ec);
    } else if (entry.is_directory(ec)) {
      seedTree(entry.path(), target, uid);
    } else if (entry.is_regular_file(ec)) {
      fs::create_hard_link(entry.path(), target, ec);
      if (ec) fs::copy_file(entry.path(), target, ec);
    }
  }
}

}  // namespace

std::string airlockBinary() { return AIRLOCK_BINARY; }

std::string ensureTestAccount(uid_t uid, bool subordinateIds) {
  const std::string id = std::to_string(uid), name = "airlock-" + id;
  const std::string first = std::to_string(2000000000ull + (uid % 1000) * 65536ull);
  const std::string last = std::to_string(2000000000ull + (uid % 1000) * 65536ull + 65535);
  std::string script =
      "set -e\n"
      "getent group " + id + " >/dev/null || groupadd -g " + id + " " + name + "\n"
      "getent passwd " + id + " >/dev/null || useradd -u " + id + " -g " + id + " -M -N -d /nonexistent "
      "-s /usr/sbin/nologin " + name + "\n"
      "user=$(getent passwd " + id + " | cut -d: -f1)\n"
      // Never another account's ranges: only the one these tests made.
      "[ \"$user\" = " + name + " ] || { echo \"uid " + id + " belongs to $user, not " + name + "\"; exit 1; }\n"
      "for kind in uid gid; do\n";
  // useradd gives ranges by itself where login.defs says so (Debian 12 does).
  if (subordinateIds)
    script += "  grep -qE \"^($user|" + id + "):\" /etc/sub$kind 2>/dev/null || "
              "usermod --add-sub${kind}s " + first + "-" + last + " \"$user\"\n";
  else
    script += "  grep -E \"^($user|" + id + "):\" /etc/sub$kind 2>/dev/null | while IFS=: read -r who start count; do "
              "usermod --del-sub${kind}s \"$start-$((start + count - 1))\" \"$user\"; done\n";
  script += "done\n";
  // A file of its own: tests in both lanes (tests/CMakeLists.txt) make the account at once.
  char output[] = "/tmp/airlock-test-account-XXXXXX";
  const int out = mkstemp(output);
  if (out < 0) return "cannot make a temporary file for the test account";
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out, 1), dup2(out, 2);
    execl("/usr/bin/flock", "flock", "/tmp/airlock-test-account.lock", "sh", "-c", script.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out);
  int status = 0;
  const bool waited = pid > 0 && waitpid(pid, &status, 0) == pid;
  std::ifstream in(output);
  std::stringstream text;
  text << in.rdbuf();
  unlink(output);
  if (!waited) return "cannot run flock for the test account";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "cannot make the test account " + name + ": " + text.str();
  return "";
}

std::string defaultCacheDir() {
  if (const char* dir = getenv("AIRLOCK_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/airlock";
  const char* home = getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/airlock";
}

TestUser::TestUser(const std::string& rootCache, const std::vector<std::string>& images) {
  namespace fs = std::filesystem;
  if (error_ = ensureTestAccount(kUid, true); !error_.empty()) return;
  char tmpl[] = "/tmp/airlock-user-XXXXXX";
  if (!mkdtemp(tmpl)) {
    error_ = "mkdtemp failed";
    return;
  }
  home_ = tmpl;
  chmod(home_.c_str(), 0755);
  std::error_code ec;
  for (const char* sub : {"/bin", "/state", "/cache/images"}) fs::create_directories(home_ + sub, ec);
  const std::string buildDir = fs::path(airlockBinary()).parent_path().string();
  for (const char* program : {"airlock", "airlock-init"}) {
    if (!fs::copy_file(buildDir + "/" + program, home_ + "/bin/" + program, ec)) {
      error_ = "cannot copy " + buildDir + "/" + program + ": " + ec.message();
      return;
    }
  }
  for (const char* sub : {"assets", "downloads"})
    if (fs::is_directory(rootCache + "/" + sub)) seedTree(rootCache + "/" + sub, home_ + "/cache/" + sub, kUid);
  for (const auto& image : images) {
    const fs::path target = home_ + "/cache/images/" + fs::path(image).filename().string();
    fs::create_hard_link(image, target, ec);
    if (ec && !fs::copy_file(image, target, ec)) {
      error_ = "cannot seed " + image + ": " + ec.message();
      return;
    }
  }
  // Everything but the seeded files (root's, shared by link) becomes the user's.
  for (const char* sub : {"", "/bin", "/bin/airlock", "/bin/airlock-init", "/state", "/cache", "/cache/images"})
    if (chown((home_ + sub).c_str(), kUid, kUid) != 0) error_ = "cannot chown " + home_ + sub;
}

TestUser::~TestUser() {
  std::error_code ec;
  if (!home_.empty()) std::filesystem::remove_all(home_, ec);
}

std::map<std::string, std::string> TestUser::env() const {
  return {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"},
          {"HOME", home_},
          {"XDG_STATE_HOME", home_ + "/state"},
          {"AIRLOCK_CACHE_DIR", home_ + "/cache"}};
}

TunMode::TunMode(mode_t mode) {
  if (stat("/dev/net/tun", &st_) == 0 && (st_.st_mode & 07777) != mode) changed_ = chmod("/dev/net/tun", mode) == 0;
}

TunMode::~TunMode() {
  if (changed_) chmod("/dev/net/tun", st_.st_mode & 07777);
}

ProcessResult runAirlock(const std::vector<std::string>& args, const std::string& input,
                         const std::map<std::string, std::string>& env, int timeoutSeconds, const TestUser* as) {
  std::vector<std::string> storage = {as ? as->binary() : airlockBinary()};
  storage.insert(storage.end(), args.begin(), args.end());
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    becomeInvoker(as, env);
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
                   const std::map<std::string, std::string>& env, int stdinFd, const TestUser* as) {
  std::vector<std::string> storage = {as ? as->binary() : airlockBinary()};
  storage.insert(storage.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in = stdinFd >= 0 ? stdinFd : open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    becomeInvoker(as, env);
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

std::string readFromTcp(const char* address, uint16_t port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, address, &addr.sin_addr);
  std::string out;
  if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    char buf[256];
    for (ssize_t n; (n = read(s, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  }
  if (s >= 0) close(s);
  return out;
}

uint16_t freeLoopbackPort() {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  close(s);
  return ntohs(addr.sin_port);
}

}  // namespace airlock::test
