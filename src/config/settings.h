#pragma once
// The configuration model: every setting a config file or flag can carry,
// the layer that set each resolved value, and the names used in files,
// flags and `airlock info`.
//
// One layer (ConfigLayer) holds what one source said, every field optional;
// resolve() (merge.h) folds built-in < user < repo (tighten-only) < flags
// into Settings, where each value remembers its layer.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agent_spec.h"
#include "agents/mcp.h"
#include "egress/policy.h"

namespace airlock::config {

/// Where a value came from, lowest precedence first.
enum class Layer { kBuiltin, kUser, kRepo, kFlag };

/// Egress profiles, widest first (egress/policy.h): permissive (any TCP),
/// standard (model API + common developer hosts), locked (model API only).
using EgressProfile = egress::Profile;

/// snapshot: the agent edits a private copy, changes go through review.
/// direct: the live workspace is shared read-write, no review.
enum class WorkspaceMode { kSnapshot, kDirect };

/// Image signature verification (see README "Image verification"), weakest
/// first: off (never checked), warn (checked; a one-line warning when the
/// image cannot be verified), require (refused, exit 68).
enum class VerifyMode { kOff, kWarn, kRequire };

/// The review gate's policy (see `airlock review --help`).
enum class ReviewPolicy { kInteractive, kAuto, kAll, kNone };

/// A value and the layer that set it.
template <typename T>
struct Sourced {
  T value{};
  Layer layer = Layer::kBuiltin;

  bool operator==(const Sourced&) const = default;
};

/// What one layer (a config file or the command line) says; unset fields
/// leave the value below in place. List fields add to the lists below.
struct ConfigLayer {
  std::optional<unsigned> cpus;                  ///< `vcpus`, 1-64
  std::optional<unsigned> memoryMib;             ///< `memory_mib`, 128-65536
  std::optional<EgressProfile> egressProfile;    ///< `egress_profile`
  std::vector<std::string> allowHosts;           ///< `allow_hosts`: HOST or HOST:PORT added to the profile
  std::vector<std::string> removeHosts;          ///< `remove_hosts`: hosts taken out of the allowlist
  std::vector<unsigned> hostPorts;               ///< `host_ports`: host loopback ports reachable from the guest
  std::vector<std::string> envForward;           ///< `env_forward`: NAME or PREFIX_* forwarded by value
  std::vector<std::string> excludes;             ///< `exclude`: gitignore patterns kept out of the snapshot
  std::optional<WorkspaceMode> workspaceMode;    ///< `workspace_mode`
  std::optional<ReviewPolicy> review;            ///< `review`
  std::optional<std::string> image;              ///< `image`: rootfs directory or erofs image to use instead
  std::vector<agents::AgentSpec> agents;         ///< `agents`: custom agent specs
  std::optional<bool> directModeAcknowledged;    ///< `direct_mode_acknowledged`: stands in for --yes
  std::optional<bool> settingsImport;            ///< `settings_import`: copy your agent settings in (a repo: off only)
  std::optional<VerifyMode> imageVerify;         ///< `image_verify`: off | warn | require
  std::optional<std::string> imageVerifyKey;     ///< `image_verify_key`: cosign public key (PEM file)
  std::optional<std::string> imageVerifyTrustedRoot;  ///< `image_verify_trusted_root`: Sigstore trusted_root.json
  std::optional<std::string> imageVerifyIssuer;  ///< `image_verify_issuer`: keyless OIDC issuer (exact)
  std::optional<std::string> imageVerifySubject; ///< `image_verify_subject`: keyless SAN regex (whole match)
  std::optional<std::string> extraCaCerts;       ///< `extra_ca_certs`: PEM certificates the guest trusts too
  std::optional<std::string> gitToken;           ///< `git_token`: env:NAME or secret:NAME (--git-token)
  std::vector<std::string> gitHosts;             ///< `git_hosts`: where the git token or SSH agent is used (--git-host)
  std::optional<bool> gitSshAgent;               ///< `git_ssh_agent`: forward your SSH agent (--git-ssh-agent)
  std::vector<std::string> gitSshKeys;           ///< `git_ssh_keys`: the keys it offers, by fingerprint (--git-ssh-key)
  std::optional<bool> gitSshConfirm;             ///< `git_ssh_confirm`: ask before each use (--git-ssh-confirm)
  std::vector<agents::McpServer> mcpServers;     ///< `mcp_servers`: MCP servers the agent starts in the VM
  std::vector<std::string> removeMcpServers;     ///< `remove_mcp_servers`: names taken out (a repo config's only say)
  /// Flags only (--mcp NAME..., --no-mcp: empty): the servers kept, by name.
  std::optional<std::vector<std::string>> onlyMcpServers;
};

/// The effective settings of one run, each with the layer that set it.
struct Settings {
  Sourced<unsigned> cpus;
  Sourced<unsigned> memoryMib;
  Sourced<EgressProfile> egressProfile;
  std::vector<Sourced<std::string>> allowHosts;
  std::vector<Sourced<std::string>> removeHosts;
  std::vector<Sourced<unsigned>> hostPorts;
  std::vector<Sourced<std::string>> envForward;
  std::vector<Sourced<std::string>> excludes;
  Sourced<WorkspaceMode> workspaceMode;
  /// Unset: interactive with a terminal, else the run asks for --review.
  std::optional<Sourced<ReviewPolicy>> review;
  std::optional<Sourced<std::string>> image;
  Sourced<bool> directModeAcknowledged;
  Sourced<bool> settingsImport{true, Layer::kBuiltin};
  std::vector<agents::AgentSpec> customAgents;
  Sourced<VerifyMode> imageVerify{VerifyMode::kWarn, Layer::kBuiltin};
  std::optional<Sourced<std::string>> imageVerifyKey;
  std::optional<Sourced<std::string>> imageVerifyTrustedRoot;
  std::optional<Sourced<std::string>> imageVerifyIssuer;
  std::optional<Sourced<std::string>> imageVerifySubject;
  /// A PEM file of CA certificates the agent trusts besides the image's
  /// (a TLS-inspecting proxy's); user config or flags only.
  std::optional<Sourced<std::string>> extraCaCerts;
  /// Where the token git pushes with comes from ("env:NAME", "secret:NAME"),
  /// and for which hosts; user config or flags only (cli/git_push.h).
  std::optional<Sourced<std::string>> gitToken;
  std::vector<Sourced<std::string>> gitHosts;
  /// Whether your SSH agent answers the guest's git over SSH, with which
  /// keys (fingerprints), asking each time or not; user config or flags
  /// only (cli/git_ssh_agent.h).
  Sourced<bool> gitSshAgent{false, Layer::kBuiltin};
  std::vector<Sourced<std::string>> gitSshKeys;
  Sourced<bool> gitSshConfirm{false, Layer::kBuiltin};
  /// The MCP servers the agent is given (agents/mcp.h), by name; user
  /// config only, which a repo config or a flag may narrow.
  std::vector<Sourced<agents::McpServer>> mcpServers;
};

/// "built-in", "user", "repo", "flag".
std::string_view layerName(Layer layer);
/// "snapshot", "direct".
std::string_view workspaceModeName(WorkspaceMode mode);
/// "interactive", "auto", "all", "none".
std::string_view reviewPolicyName(ReviewPolicy policy);
/// "off", "warn", "require".
std::string_view verifyModeName(VerifyMode mode);

/// Parse the names above; nullopt for anything else.
std::optional<EgressProfile> parseEgressProfile(std::string_view text);
std::optional<WorkspaceMode> parseWorkspaceMode(std::string_view text);
std::optional<ReviewPolicy> parseReviewPolicy(std::string_view text);
std::optional<VerifyMode> parseVerifyMode(std::string_view text);

/// A DNS name ("api.anthropic.com", "*.example.com"), optionally ":PORT"
/// (1-65535); the rules of egress::parseHostRule.
bool isHostPattern(std::string_view text);
/// An environment variable name, or a prefix ending in '*'.
bool isEnvPattern(std::string_view text);
/// Where a token is held on the host: "env:NAME" (a variable of airlock's
/// environment) or "secret:NAME" (airlock's secret store), NAME not empty
/// (`git_token`, an MCP server's `token`). A token written in place is not.
bool isTokenSource(std::string_view text);

}  // namespace airlock::config
