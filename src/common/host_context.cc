#include "common/host_context.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "common/fd.h"

namespace airlock {
namespace {

std::string orDefault(const EnvMap& env, const char* name, const std::string& fallback) {
  auto it = env.find(name);
  return it != env.end() && !it->second.empty() ? it->second : fallback;
}

/// /dev/tty, or stdin when it and stdout are the same terminal (`su -c`, setsid).
bool controllingTerminal() {
  Fd tty(::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (tty) return true;
  if (!::isatty(0) || !::isatty(1)) return false;
  struct stat in {}, out {};
  return ::fstat(0, &in) == 0 && ::fstat(1, &out) == 0 && in.st_rdev == out.st_rdev;
}

}  // namespace

HostContext readHostContext(char** environ) {
  static const SystemClock clock;
  HostContext ctx;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos) ctx.env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  ctx.uid = ::getuid();
  ctx.euid = ::geteuid();
  ctx.gid = ::getgid();
  mode_t mask = ::umask(077);
  ::umask(mask);
  ctx.umask = static_cast<uint32_t>(mask);
  ctx.clock = &clock;

  std::string home = orDefault(ctx.env, "HOME", "");
  if (home.empty()) {
    if (passwd* pw = ::getpwuid(ctx.uid)) home = pw->pw_dir;
    if (home.empty()) home = "/tmp";
  }
  ctx.dirs.home = home;
  ctx.dirs.cache = orDefault(ctx.env, "AIRLOCK_CACHE_DIR", orDefault(ctx.env, "XDG_CACHE_HOME", home + "/.cache") + "/airlock");
  ctx.dirs.state = orDefault(ctx.env, "XDG_STATE_HOME", home + "/.local/state") + "/airlock";
  std::string xdgConfig = orDefault(ctx.env, "XDG_CONFIG_HOME", "");
  ctx.dirs.config = (xdgConfig.starts_with('/') ? xdgConfig : home + "/.config") + "/airlock";
  std::string xdgData = orDefault(ctx.env, "XDG_DATA_HOME", "");
  ctx.dirs.data = (xdgData.starts_with('/') ? xdgData : home + "/.local/share") + "/airlock";

  ctx.terminal.stdinTty = ::isatty(0);
  ctx.terminal.stdoutTty = ::isatty(1);
  ctx.terminal.stderrTty = ::isatty(2);
  ctx.terminal.controlling = controllingTerminal();
  ctx.terminal.term = orDefault(ctx.env, "TERM", "");
  ctx.terminal.pager = orDefault(ctx.env, "PAGER", "less -R");

  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  ctx.selfDir = ".";
  if (n > 0) {
    std::string path(exe, static_cast<size_t>(n));
    ctx.selfDir = path.substr(0, path.rfind('/'));
  }
  return ctx;
}

}  // namespace airlock
