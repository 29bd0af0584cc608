#pragma once
// `airlock run-image`'s command line, parsed apart from running it so the
// parse can be tested without booting anything.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/detach.h"
#include "cli/egress_flags.h"
#include "cli/registry_flags.h"
#include "common/error.h"

namespace airlock::cli {

/// Everything `airlock run-image` was asked to do.
struct RunImageArgs {
  std::string rootfs;
  std::string image;  ///< an image reference, when --rootfs is not given
  RegistryFlags registry;
  bool userGiven = false;
  unsigned cpus = 1;
  unsigned memory = 512;
  std::vector<std::string> env;
  std::string workspace;
  bool acceptFailed = false;  ///< --accept-failed: auto/all review flushes even when the command failed
  std::string review;  ///< with -w: snapshot the workspace and review the changes (interactive, auto, all, none)
  std::string git;     ///< --git: none, refs-only, branches
  std::string accel = "auto";
  std::string tty = "auto";
  std::string workdir;
  unsigned user = 0;
  bool quiet = false;
  EgressFlags egress;
  DetachFlags detached;  ///< -d, --name (with -w: a snapshot session)
  std::vector<std::string> command;
};

/// Adds run-image's options to `cmd` (storing into `args`) and makes the
/// first non-option word end the options (IMAGE, or CMD with --rootfs).
void addRunImageOptions(CLI::App& cmd, RunImageArgs& args);

/// After `cmd` parsed: IMAGE and the command from the words left over and
/// `afterDoubleDash` (the words after the first `--`). kUsage errors: an
/// unknown option, an option after IMAGE (options go before IMAGE; the command
/// after --), no IMAGE and no --rootfs, --rootfs without a command.
Result<> finishRunImageArgs(RunImageArgs& args, const CLI::App& cmd, const std::vector<std::string>& afterDoubleDash);

}  // namespace airlock::cli
