#pragma once
// The flags of `airlock run` that change the isolation envelope (size,
// image, workspace, excludes, review, egress, forwarded variables), shared
// with `airlock info` so that `airlock info AGENT [run's flags]` previews
// exactly that run: both register them with addPolicyFlags() and map them to
// the top config layer with flagLayer().

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/egress_flags.h"
#include "config/settings.h"
#include "session/plan.h"

namespace airlock::cli {

/// Raw values of the envelope-changing flags; empty/0 = not given.
struct PolicyFlags {
  std::string review;                 ///< --review
  std::string git;                    ///< --git: none, refs-only, branches
  std::string gitToken;               ///< --git-token: env:NAME or secret:NAME
  std::vector<std::string> gitHosts;  ///< --git-host: where --git-token or --git-ssh-agent is used (default github.com)
  bool gitSshAgent = false;             ///< --git-ssh-agent
  bool noGitSshAgent = false;           ///< --no-git-ssh-agent: off for this run, whatever the config says
  std::vector<std::string> gitSshKeys;  ///< --git-ssh-key: fingerprints
  bool gitSshConfirm = false;           ///< --git-ssh-confirm
  std::vector<std::string> env;       ///< -e/--env NAME or NAME=VALUE
  std::vector<std::string> excludes;  ///< --exclude
  EgressFlags egress;                 ///< --egress-profile, --allow-host, --host-port, --publish, --egress-log
  std::string workspaceMode;          ///< --workspace-mode
  unsigned cpus = 0;                  ///< --cpus
  unsigned memory = 0;                ///< --memory (MiB)
  std::string image;                  ///< --image: an OCI image reference booted instead of the agent's image
  std::vector<std::string> mcp;       ///< --mcp NAME: only these MCP servers of the config
  bool noMcp = false;                 ///< --no-mcp: none of them
};

/// Adds the flags to `cmd`, storing into `flags`.
void addPolicyFlags(CLI::App& cmd, PolicyFlags& flags);

/// `--git MODE` (none, refs-only, branches) into `mode`: what a review does
/// with the agent's commits (workspace::parseGitImportMode()).
void addGitFlag(CLI::App& cmd, std::string& mode);

/// What the command line says, as the top config layer (--env contributes
/// only the variable's name, never its value). --host-port, --publish and
/// --image are not config keys: callers pass them on (config::RunPorts,
/// config::describeImage).
config::ConfigLayer flagLayer(const PolicyFlags& flags);

/// Where the run's root filesystem comes from: --image (`imageFlag`, a
/// registry reference), else the configured `image` (a path when it starts
/// with '/' or '.'), else the agent's (pulled when its spec names a
/// reference, else built). `line` gets the progress line ("image for codex").
session::ImageSource imageSource(const std::string& imageFlag, const config::Settings& settings,
                                 const agents::AgentSpec& spec, std::string& line);

}  // namespace airlock::cli
