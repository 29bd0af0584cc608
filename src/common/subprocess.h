#pragma once
// Running host programs: one-shot commands with captured output, and
// long-lived children tied to airlock's lifetime (PR_SET_PDEATHSIG).

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"

namespace airlock {

/// Result of a finished command: exit status and captured output.
struct CommandOutput {
  int exitCode = 0;     ///< exit code, or 128+signal when killed by a signal
  std::string stdoutText;
  std::string stderrText;
};

/// Runs argv[0] (PATH lookup) with argv, waits for it, and captures stdout and
/// stderr. Fails only when the program cannot be started; a non-zero exit is
/// reported in CommandOutput. `cwd` empty means the current directory.
/// Under an InterruptScope (common/interrupt.h) that caught a signal, it
/// runs nothing and fails with 128 + that signal.
Result<CommandOutput> runCommand(const std::vector<std::string>& argv, const std::string& cwd = {});

/// Like runCommand, but a non-zero exit is an error whose message names the
/// command and quotes the last line of its stderr.
Result<std::string> runChecked(const std::vector<std::string>& argv, const std::string& cwd = {});

/// Options for a long-lived child process.
struct SpawnOptions {
  std::string stdoutPath;   ///< file to append stdout to; empty = /dev/null
  std::string stderrPath;   ///< file to append stderr to; empty = /dev/null
  /// Runs in the child after fork, before exec (async-signal-safe calls only).
  /// Returns 0 or an errno value that aborts the spawn.
  std::function<int()> beforeExec;
  /// Runs in the parent right after fork with the child's pid, while the
  /// child may wait inside beforeExec for it (e.g. for the uid map of its
  /// new user namespace). Returns 0 or an errno value; on failure the child
  /// is killed and reaped and the spawn fails.
  std::function<int(pid_t)> afterFork;
  /// Descriptors the child keeps open across exec under the same numbers
  /// (their close-on-exec flag is cleared in the child); all others >= 3 are closed.
  std::vector<int> keepFds;
  /// The child starts as pid 1 of a new PID namespace (clone(2)'s
  /// CLONE_NEWPID; needs CAP_SYS_ADMIN in airlock's user namespace): it can
  /// see, signal or trace no process outside it. Its parent's pid reads 0
  /// there (getppid(2)).
  bool newPidNamespace = false;
  /// The child's whole environment ("NAME=value"); empty: minimalEnvironment().
  std::vector<std::string> environment;
};

/// Starts argv[0] (absolute path) as a child that receives SIGKILL when the
/// calling thread's process dies (PR_SET_PDEATHSIG, set again after
/// beforeExec, whose change of credentials clears it), in its own process
/// group, with all other file descriptors closed, and an environment
/// holding only PATH unless options.environment says otherwise (airlock's
/// environment may carry API keys: they never reach QEMU, virtiofsd or any
/// other helper). A child whose parent died
/// before the signal was armed exits instead of running. Returns the pid.
/// Call it from the main thread: PDEATHSIG fires when the forking thread exits.
Result<pid_t> spawnTied(const std::vector<std::string>& argv, const SpawnOptions& options);

/// The environment given to helper processes: PATH only, as "PATH=...".
std::vector<std::string> minimalEnvironment();

/// Finds `name` on the PATH of the process environment, the one runCommand's
/// children inherit (or checks an absolute path). Empty when not found.
std::string findProgram(const std::string& name);

}  // namespace airlock
