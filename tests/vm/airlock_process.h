#pragma once
// Test helper: runs the airlock binary as a user would, feeding stdin and
// capturing stdout and stderr separately, with a deadline.

#include <sys/stat.h>
#include <sys/types.h>

#include <map>
#include <cstdint>
#include <string>
#include <vector>

namespace airlock::test {

struct ProcessResult {
  int exitCode = -1;  ///< code, 128+signal, or -1 if it had to be killed at the deadline
  std::string out;
  std::string err;
};

/// Path of the airlock binary under test.
std::string airlockBinary();

/// Makes the account `uid` (user and group "airlock-UID", uid = gid, no
/// home, no login shell) when this host has none, as root; with
/// `subordinateIds`, also a range of 65536 subordinate uids and gids
/// (/etc/subuid, /etc/subgid: what Debian's adduser and scripts/setup give a
/// login) at 2000000000 + (uid % 1000) * 65536 when it has none. Serialised
/// across test processes by a lock file. Fails when `uid` is another
/// account's. Empty when ready, else what failed.
std::string ensureTestAccount(uid_t uid, bool subordinateIds);

/// An unprivileged user to run airlock as a user would, from a test run by
/// root (CI runs as root): uid and gid kUid, the account ensureTestAccount
/// makes, with its own group as its one supplementary group (as a login
/// has). Its home is a fresh 0755 directory under /tmp with
/// its own copies of airlock and airlock-init (the build tree may sit under
/// a 0700 directory only root can enter), its state dir, and a cache seeded
/// from root's: the boot assets and downloads, and the images named, as
/// hard links (copies across file systems), in directories the user owns.
/// Removed with the object.
class TestUser {
 public:
  static constexpr uid_t kUid = 4242;

  /// `rootCache`: root's airlock cache dir; `images`: image files in it to
  /// seed. Check error() before use.
  TestUser(const std::string& rootCache, const std::vector<std::string>& images);
  ~TestUser();
  TestUser(const TestUser&) = delete;
  TestUser& operator=(const TestUser&) = delete;

  /// Empty when the user's home is ready, else what failed.
  const std::string& error() const { return error_; }
  /// The user's home directory (owned by the user).
  const std::string& home() const { return home_; }
  /// The user's copy of the airlock binary.
  std::string binary() const { return home_ + "/bin/airlock"; }
  /// The whole environment airlock gets as this user: PATH, HOME,
  /// XDG_STATE_HOME and AIRLOCK_CACHE_DIR under home().
  std::map<std::string, std::string> env() const;

 private:
  std::string home_, error_;
};

/// Root's airlock cache dir as airlock computes it from this process's
/// environment (AIRLOCK_CACHE_DIR, XDG_CACHE_HOME, HOME).
std::string defaultCacheDir();

/// /dev/net/tun given `mode` for one test (0666 makes it usable by every
/// user, as standard distributions ship it; some machines have 0600),
/// restored afterwards.
class TunMode {
 public:
  explicit TunMode(mode_t mode);
  ~TunMode();
  TunMode(const TunMode&) = delete;
  TunMode& operator=(const TunMode&) = delete;

 private:
  struct stat st_ {};
  bool changed_ = false;
};

/// Runs `airlock args...` with `input` on stdin and `env` added to the
/// environment; kills it after `timeoutSeconds`. With `as`, it runs as that
/// user, from the user's copy of the binary, with only the user's env()
/// plus `env`.
ProcessResult runAirlock(const std::vector<std::string>& args, const std::string& input = "",
                         const std::map<std::string, std::string>& env = {}, int timeoutSeconds = 300,
                         const TestUser* as = nullptr);

/// Starts `airlock args...` in the background with stdout/stderr to a file
/// and stdin from `stdinFd` (/dev/null when -1); returns its pid. `as` as
/// for runAirlock.
pid_t startAirlock(const std::vector<std::string>& args, const std::string& outPath,
                   const std::map<std::string, std::string>& env = {}, int stdinFd = -1,
                   const TestUser* as = nullptr);

/// Pids of running processes whose argv[0] has the basename `program` and
/// whose command line, or the path of whose stdout, contains `needle` (e.g. a
/// test's own state directory, so VMs of other tests or users are not
/// counted; a jailed QEMU's command line names only jail paths, its stdout
/// is the run directory's qemu.log).
std::vector<pid_t> processesNamed(const std::string& program, const std::string& needle = "");

/// Reads a whole file ("" if missing).
std::string slurp(const std::string& path);

/// Connects to address:port (IPv4) and returns what the peer sends before closing ("" when refused).
std::string readFromTcp(const char* address, uint16_t port);

/// A free TCP port on 127.0.0.1 (bound and released).
uint16_t freeLoopbackPort();

}  // namespace airlock::test
