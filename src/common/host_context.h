#pragma once
// Everything airlock learns about the host it runs on, read once in
// cli/main.cc (readHostContext) and passed down by reference: the XDG
// directories, the environment, the clock, the user's umask and ids, and the
// terminal facts. No code below src/cli reads the environment itself
// (scripts/check-no-env-reads); it takes what it needs from here (mold's
// Context, leveldb's Options::env), so tests build a HostContext of their own.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>

namespace airlock {

/// The process environment at start-up: NAME -> value.
using EnvMap = std::map<std::string, std::string>;

/// Where airlock keeps its files (XDG base directories, absolute paths).
struct HostDirs {
  /// Downloads and built assets (kernel, initramfs, erofs images, image store):
  /// $AIRLOCK_CACHE_DIR, else $XDG_CACHE_HOME/airlock, else ~/.cache/airlock.
  std::string cache;
  /// Sessions, flush journals, locks, logs: $XDG_STATE_HOME/airlock, else
  /// ~/.local/state/airlock.
  std::string state;
  /// The user config file's directory: $XDG_CONFIG_HOME/airlock when that is
  /// an absolute path (XDG ignores relative ones), else ~/.config/airlock.
  std::string config;
  /// Data airlock keeps for the user (the secret index and file store):
  /// $XDG_DATA_HOME/airlock when that is an absolute path, else
  /// ~/.local/share/airlock.
  std::string data;
  /// The user's home directory ($HOME, else the passwd entry).
  std::string home;
};

/// What the standard streams are connected to, read once at start-up.
struct TerminalFacts {
  bool stdinTty = false;   ///< isatty(0)
  bool stdoutTty = false;  ///< isatty(1)
  bool stderrTty = false;  ///< isatty(2)
  /// /dev/tty opens (or stdin and stdout are the same terminal): an
  /// interactive review can ask its questions whatever stdin/stdout are.
  bool controlling = false;
  std::string term;   ///< $TERM ("" when unset)
  std::string pager;  ///< $PAGER, else "less -R"
};

/// The time source; tests substitute their own.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::system_clock::time_point now() const = 0;
};

/// The real clock.
class SystemClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override { return std::chrono::system_clock::now(); }
};

struct HostContext {
  HostDirs dirs;
  EnvMap env;                 ///< the process environment at start-up
  TerminalFacts terminal;
  uid_t uid = 0;              ///< getuid()
  uid_t euid = 0;             ///< geteuid(): 0 when airlock runs with root's privileges
  gid_t gid = 0;              ///< getgid()
  uint32_t umask = 022;       ///< the process's file creation mask
  std::string selfDir;        ///< the directory of the running airlock executable ("." when unknown)
  const Clock* clock = nullptr;  ///< never null once built by readHostContext()

  /// The value of environment variable `name`, "" when unset.
  std::string getEnv(const std::string& name) const {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  }
};

/// Reads the context of this process: `environ`, isatty, /dev/tty, umask,
/// ids, /proc/self/exe. Only cli/main.cc (and tests that want the real host)
/// call it.
HostContext readHostContext(char** environ);

}  // namespace airlock
