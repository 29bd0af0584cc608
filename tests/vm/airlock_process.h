#pragma once
// Test helper: runs the airlock binary as a user would, feeding stdin and
// capturing stdout and stderr separately, with a deadline.

#include <sys/types.h>

#include <map>
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

/// Runs `airlock args...` with `input` on stdin and `env` added to the
/// environment; kills it after `timeoutSeconds`.
ProcessResult runAirlock(const std::vector<std::string>& args, const std::string& input = "",
                         const std::map<std::string, std::string>& env = {}, int timeoutSeconds = 300);

/// Starts `airlock args...` in the background with stdout/stderr to a file
/// and stdin from `stdinFd` (/dev/null when -1); returns its pid.
pid_t startAirlock(const std::vector<std::string>& args, const std::string& outPath,
                   const std::map<std::string, std::string>& env = {}, int stdinFd = -1);

/// Pids of running processes whose argv[0] has the basename `program` and
/// whose command line, or the path of whose stdout, contains `needle` (e.g. a
/// test's own state directory, so VMs of other tests or users are not
/// counted; a jailed QEMU's command line names only jail paths, its stdout
/// is the run directory's qemu.log).
std::vector<pid_t> processesNamed(const std::string& program, const std::string& needle = "");

/// Reads a whole file ("" if missing).
std::string slurp(const std::string& path);

}  // namespace airlock::test
