#include "config/user_config.h"

#include <sys/stat.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"

namespace airlock::config {

const std::string& userConfigTemplate() {
  static const std::string text = R"(# airlock user config. Precedence: flags > this file > the repo's .airlock.yaml
# > built-in defaults; a repo's .airlock.yaml can only tighten (fewer vCPUs,
# less memory, a narrower egress profile, removed hosts, more excludes, snapshot
# mode, interactive review). `airlock info AGENT` shows the result and which
# layer set each value. Uncomment what you need.

# Guest size (default: the agent's, usually 2 vCPUs and 4096 MiB).
# vcpus: 2
# memory_mib: 4096

# Egress: permissive (any TCP), standard (model API + common developer hosts),
# locked (model API only). allow_hosts adds HOST or HOST:PORT; remove_hosts
# takes hosts out.
# egress_profile: standard
# allow_hosts: [internal.example.com, "git.example.com:8443"]
# remove_hosts: [rubygems.org]

# Ports on your loopback the agent may reach at 10.0.2.2:PORT (a local model server).
# host_ports: [11434]

# Host variables forwarded by value (a name, or a prefix ending in *), on top
# of the agent's own list.
# env_forward: [OPENAI_API_KEY, "MYTOOL_*"]

# Files kept out of the snapshot (gitignore syntax); secret files always are.
# exclude: ["*.sqlite", "data/"]

# snapshot (default): the agent edits a private copy, you review its changes.
# direct mode: the agent edits your live files read-write, nothing is reviewed;
# needs --yes on each run, or direct_mode_acknowledged: true below.
# workspace_mode: snapshot
# direct_mode_acknowledged: false

# Your own agent settings (~/.claude/CLAUDE.md, settings.json with secret-
# bearing keys dropped, skills, commands...; see README "Agent state and
# settings") are copied into the VM read-only at each run. false: never.
# settings_import: true

# Review policy: interactive (default with a terminal), auto, all, none.
# review: interactive

# Boot this root instead of the agent's image: a rootfs directory or an erofs image.
# image: /path/to/rootfs

# Image signatures (cosign), checked offline on pulls (`image pull`, `run-image
# IMAGE`, `run --image`): off, warn (default: a warning when unverifiable), or
# require (refuse, exit 68). Key-based: a cosign public key (PEM). Keyless: a
# Sigstore trusted_root.json, the OIDC issuer and a regex for the signer's identity.
# image_verify: warn
# image_verify_key: /path/to/cosign.pub
# image_verify_trusted_root: /path/to/trusted_root.json
# image_verify_issuer: https://token.actions.githubusercontent.com
# image_verify_subject: "^https://github.com/org/repo/\\.github/workflows/release\\.yml@refs/tags/.*$"

# CA certificates (a PEM file) the agent trusts besides its image's own: your
# company's TLS-inspecting proxy, a local test CA. Added to the guest's bundle
# (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE). Not in a repo's
# .airlock.yaml.
# extra_ca_certs: /usr/local/share/ca-certificates/corp-proxy.pem

# Let the agent's git push over HTTPS with a token that stays on this host
# (the broker adds it; the VM never holds it), as --git-token and --git-host:
# env:NAME (a variable of your environment) or secret:NAME (airlock secret
# set NAME); hosts default to github.com. Not in a repo's .airlock.yaml.
# git_token: env:GITHUB_TOKEN
# git_hosts: [github.com]

# Let the agent's git push over SSH with your SSH agent ($SSH_AUTH_SOCK), as
# --git-ssh-agent, --git-ssh-key and --git-ssh-confirm: only the keys listed
# here (fingerprints, as `ssh-add -l` prints them) are offered, only SSH
# logins are signed, port 22 opens for git_hosts only, and the VM never
# holds a key. git_ssh_confirm asks through SSH_ASKPASS before each login.
# Not in a repo's .airlock.yaml (which may only turn git_ssh_confirm on).
# git_ssh_agent: true
# git_ssh_keys: [SHA256:0CkLlpZ9hXGhXOzBi3VmDhWQoTVyvNo8OmXVzdxCHwY]
# git_ssh_confirm: false

# MCP servers the agent starts inside its VM (stdio), as the agent user:
# from npm (PACKAGE@VERSION, an exact version: installed into the agent's
# image) or a program the image has (an absolute path). Claude Code takes
# them; `airlock info AGENT` says which agents do. `env` values enter the
# VM. --mcp NAME (only these) and --no-mcp choose per run. A repo's
# .airlock.yaml may only remove them (remove_mcp_servers: [NAME]).
# mcp_servers:
#   fs: {npm: "@modelcontextprotocol/server-filesystem@2026.8.31", args: [/workspace]}
#   tool: {command: [/usr/local/bin/tool, --stdio], env: {TOOL_LEVEL: "2"}}

# Custom agents, in the agent spec schema (see `airlock agents show claude-code`).
# agents:
#   my-agent:
#     description: My agent
#     image: {npm_package: my-agent, version: "1.0.0", binary: bin/my-agent, install_as: my-agent, node: true}
#     command: [my-agent]
#     env_forward: [MY_AGENT_KEY]
#     egress: {model_hosts: [api.example.com], extra_hosts: []}
)";
  return text;
}

Result<> writeUserConfig(const std::string& path, bool force) {
  struct stat st {};
  if (!force && ::lstat(path.c_str(), &st) == 0)
    return failWith(exit_code::kUsage, "{} already exists; pass --force to replace it", path);
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0)
    if (auto r = makeDirs(path.substr(0, slash), 0700); !r) return r;
  return writeFileAtomic(path, userConfigTemplate(), 0600);
}

}  // namespace airlock::config
