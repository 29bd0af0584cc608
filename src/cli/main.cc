// airlock: run AI coding agents inside microVMs, review their changes before
// they reach your files. This is the CLI boundary: the only place exceptions
// are caught and turned into exit codes.

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agents/registry.h"
#include "cli/commands.h"
#include "common/exit_codes.h"

namespace {

constexpr const char* kExitCodes = R"(Exit codes:
  0-63, 128+N   the command's own exit code (128+N: killed by signal N)
  64  usage: bad flags or arguments
  65  host not ready: QEMU, virtiofsd, kernel assets or disk space missing
  66  the VM failed: guest kernel panic, QEMU crash, lost control channel
  67  image: the rootfs could not be built or read
  68  image signature verification refused
  69  egress policy cannot be enforced on this host
  70  review left changes pending (rejected or held back; kept in the session)
  71  flush conflict: a file changed on the host; not overwritten
  72  internal error
  73  another airlock session is running on this workspace (see --wait))";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"airlock: run AI coding agents in microVMs; nothing reaches your files until you review it."};
  app.name("airlock");
  app.footer(kExitCodes);
  app.require_subcommand(1);
  app.set_version_flag("--version", "airlock 0.1.0");
  int exitCode = 0;
  // Everything after the first `--` is a guest command, passed on untouched
  // (CLI11 would otherwise hand it to the root app as unexpected extras).
  std::vector<std::string> afterDoubleDash;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    afterDoubleDash.assign(argv + i + 1, argv + argc);
    argc = i;
    break;
  }
  // `airlock AGENT ...` is `airlock run AGENT ...`.
  std::vector<char*> args(argv, argv + argc);
  if (argc > 1) {
    if (auto registry = airlock::agents::AgentRegistry::builtin(); registry && registry->find(argv[1]))
      args.insert(args.begin() + 1, const_cast<char*>("run"));
  }
  airlock::cli::addRunImageCommand(app, exitCode, afterDoubleDash);
  airlock::cli::addRunCommand(app, exitCode, afterDoubleDash);
  airlock::cli::addReviewCommand(app, exitCode);
  airlock::cli::addJanitorCommand(app, exitCode);
  airlock::cli::addAgentsCommand(app, exitCode);
  airlock::cli::addImageCommand(app, exitCode);
  airlock::cli::addInfoCommand(app, exitCode);
  airlock::cli::addDoctorCommand(app, exitCode);
  airlock::cli::addConfigCommand(app, exitCode);
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : airlock::exit_code::kUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "airlock: %s\n", e.what());
    return airlock::exit_code::kInternal;
  }
  return exitCode;
}
