#include "cli/run_flags.h"

#include "cli/repeatable.h"

namespace airlock::cli {

void addGitFlag(CLI::App& cmd, std::string& mode) {
  cmd.add_option("--git", mode,
                 "What a review does with the agent's commits: refs-only (default: under refs/airlock/NAME/ in your "
                 "repository), branches (also create or fast-forward your branches that are not checked out), or none")
      ->check(CLI::IsMember({"none", "refs-only", "branches"}));
}

void addPolicyFlags(CLI::App& cmd, PolicyFlags& flags) {
  cmd.add_option("--review", flags.review,
                 "interactive (default with a terminal; answered on the terminal even when stdin/stdout are "
                 "redirected), auto (accept all but held-back paths), all, or none "
                 "(keep every change in the session)")
      ->check(CLI::IsMember({"interactive", "auto", "all", "none"}));
  addGitFlag(cmd, flags.git);
  cmd.add_option("--git-token", flags.gitToken,
                 "Let the agent's git push over HTTPS: env:NAME (a variable holding a token) or secret:NAME "
                 "(airlock secret set NAME); the token is added on this host and never enters the VM");
  repeatable(cmd.add_option("--git-host", flags.gitHosts,
                            "A git host --git-token or --git-ssh-agent is used for (default: github.com); repeatable"));
  cmd.add_flag("--git-ssh-agent", flags.gitSshAgent,
               "Let the agent's git push over SSH with your SSH agent ($SSH_AUTH_SOCK): the listed keys only, SSH "
               "logins only, port 22 of the --git-host hosts only; no key enters the VM");
  cmd.add_flag("--no-git-ssh-agent", flags.noGitSshAgent, "Do not forward your SSH agent this time (git_ssh_agent)")
      ->excludes("--git-ssh-agent");
  repeatable(cmd.add_option("--git-ssh-key", flags.gitSshKeys,
                            "A key --git-ssh-agent offers, by fingerprint as `ssh-add -l` prints it (SHA256:...); "
                            "repeatable"));
  cmd.add_flag("--git-ssh-confirm", flags.gitSshConfirm,
               "Ask before each SSH login the agent makes with your key (through $SSH_ASKPASS)");
  repeatable(cmd.add_option("-e,--env", flags.env, "Forward a variable: NAME (your value) or NAME=VALUE; repeatable"));
  repeatable(cmd.add_option("--exclude", flags.excludes,
                            "Keep matching files out of the snapshot (gitignore syntax); repeatable"));
  addEgressFlags(cmd, flags.egress, "standard, or egress_profile from your config");
  cmd.add_option("--workspace-mode", flags.workspaceMode,
                 "snapshot (default: the agent edits a copy, you review) or direct (your live files read-write, "
                 "no review; needs --yes)")
      ->check(CLI::IsMember({"snapshot", "direct"}));
  cmd.add_option("--cpus", flags.cpus, "vCPUs (default: the agent's)")->check(CLI::Range(1, 64));
  cmd.add_option("--memory", flags.memory, "Guest memory in MiB (default: the agent's)")->check(CLI::Range(128, 65536));
  cmd.add_option("--image", flags.image, "Boot this OCI image (a registry reference) instead of the agent's image");
  auto* mcp = repeatable(cmd.add_option("--mcp", flags.mcp,
                                        "Give the agent only this MCP server of your config (mcp_servers); repeatable"))
                  ->type_name("NAME");
  cmd.add_flag("--no-mcp", flags.noMcp, "Give the agent none of the MCP servers of your config")->excludes(mcp);
}

config::ConfigLayer flagLayer(const PolicyFlags& args) {
  config::ConfigLayer flags;
  if (args.cpus) flags.cpus = args.cpus;
  if (args.memory) flags.memoryMib = args.memory;
  if (!args.review.empty()) flags.review = config::parseReviewPolicy(args.review);
  if (!args.workspaceMode.empty()) flags.workspaceMode = config::parseWorkspaceMode(args.workspaceMode);
  flags.excludes = args.excludes;
  if (!args.egress.profile.empty()) flags.egressProfile = config::parseEgressProfile(args.egress.profile);
  flags.allowHosts = args.egress.allowHosts;
  for (const auto& e : args.env) flags.envForward.push_back(e.substr(0, e.find('=')));
  if (!args.gitToken.empty()) flags.gitToken = args.gitToken;
  flags.gitHosts = args.gitHosts;
  if (args.gitSshAgent) flags.gitSshAgent = true;
  if (args.noGitSshAgent) flags.gitSshAgent = false;
  flags.gitSshKeys = args.gitSshKeys;
  if (args.gitSshConfirm) flags.gitSshConfirm = true;
  if (args.noMcp)
    flags.onlyMcpServers.emplace();
  else if (!args.mcp.empty())
    flags.onlyMcpServers = args.mcp;
  return flags;
}

session::ImageSource imageSource(const std::string& imageFlag, const config::Settings& settings,
                                 const agents::AgentSpec& spec, std::string& line) {
  using Kind = session::ImageSource::Kind;
  if (!imageFlag.empty()) {
    line = "image " + imageFlag;
    return {Kind::kReference, imageFlag};
  }
  if (settings.image) {
    const std::string& image = settings.image->value;
    line = "image " + image;
    return {image.starts_with('/') || image.starts_with('.') ? Kind::kPath : Kind::kReference, image};
  }
  if (!spec.image.reference.empty()) {
    line = "image " + spec.image.reference;
    return {Kind::kReference, spec.image.reference};
  }
  line = "image for " + spec.name;
  return {Kind::kAgentBuild, spec.name};
}

}  // namespace airlock::cli
