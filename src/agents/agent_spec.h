#pragma once
// An agent spec: everything airlock needs to know to build an agent's image
// and run it in a microVM. Built-in specs are YAML files under
// src/agents/builtin/ compiled into the binary (see registry.h); the YAML
// schema is the one parseAgentSpec() accepts (spec_parser.h).

#include <map>
#include <string>
#include <vector>

#include "agents/mcp.h"

namespace airlock::agents {

/// How the agent's program gets into its image: one npm package at a pinned
/// version, either a native binary copied in, or a JavaScript package run by
/// a Node runtime that is put into the image with it. No package (`image:
/// {}`): the Debian base image alone, for a program it has (the `shell`
/// agent's bash).
struct ImageRecipe {
  std::string npmPackage;     ///< the agent's npm package, e.g. "@anthropic-ai/claude-code"
  std::string version;        ///< pinned version of npmPackage
  std::string nativePackage;  ///< package holding the linux-x64 binary; empty: npmPackage itself
  std::string nativeVersion;  ///< version of nativePackage; empty: `version`
  /// Path inside the package holding the program: the binary copied to
  /// /usr/local/bin/<installAs>, or with `node` the script a wrapper runs.
  std::string binary;
  std::string installAs;  ///< file name under /usr/local/bin
  /// true: a Node runtime goes into the image, the package is installed with
  /// its dependencies under /opt/<agent name>, and /usr/local/bin/<installAs>
  /// is a wrapper script running `binary` with it.
  bool node = false;
  /// Without `node`: the program is not in the npm package but in a release
  /// archive its package.json "archives" names for this platform (only
  /// "linux-x64"), with URL and SHA-256 (image/release_archive.h); `binary`
  /// is the path inside the archive's top folder.
  std::string archive;
  /// Instead of npmPackage: a PyPI project, installed with `version` into a
  /// venv under /opt/<agent name> with Debian's python3; `binary` names its
  /// console script (entry_points.txt), run as /usr/local/bin/<installAs>.
  std::string pypiPackage;
  /// Instead of all of the above (custom agents: `image: REFERENCE`): an OCI
  /// image reference pulled into the image store and booted as it is.
  std::string reference;
  /// Not from the spec but from the user config (agents/mcp.h): the npm
  /// packages of MCP servers put into the image besides the agent, server
  /// name -> "PACKAGE@VERSION", each installed under /opt/mcp/<name> with a
  /// Node runtime and a wrapper mcp-<name> on the PATH.
  std::map<std::string, std::string> mcpPackages;

  /// True for `image: {}`: the base image, nothing installed.
  bool baseOnly() const { return reference.empty() && npmPackage.empty() && pypiPackage.empty(); }
  /// The package the program file is taken from (nativePackage or npmPackage).
  const std::string& programPackage() const { return nativePackage.empty() ? npmPackage : nativePackage; }
  /// The version of programPackage().
  const std::string& programVersion() const { return nativeVersion.empty() ? version : nativeVersion; }

  bool operator==(const ImageRecipe&) const = default;
};

/// Host names the agent needs, per egress profile.
struct EgressHosts {
  std::vector<std::string> modelHosts;  ///< the model API: all the 'locked' profile allows
  std::vector<std::string> extraHosts;  ///< added to the 'standard' profile's common developer hosts

  bool operator==(const EgressHosts&) const = default;
};

/// One path of the user's own agent settings on the host, copied into the
/// guest read-only at each run (issue 16): a file or a directory, the same
/// path relative to $HOME on both sides (".claude/CLAUDE.md").
struct SettingsImport {
  std::string path;
  /// A JSON file's top-level keys that are copied (the rest is dropped and
  /// reported); empty: the file or directory is copied as it is.
  std::vector<std::string> keys;

  bool operator==(const SettingsImport&) const = default;
};

/// How the agent logs in with an account (issue 15): the login is kept on
/// the host (`airlock login AGENT`) and the credential broker puts the real
/// token on the wire; the guest gets placeholders. Where the broker cannot
/// serve the agent (`delivery: vm`), the real credential file enters the VM
/// on a tmpfs and is read back when the agent exits. Empty format: the
/// agent has no login airlock keeps (API keys are forwarded by value).
struct LoginSpec {
  /// How the agent's credential file reads ("claude-oauth",
  /// "gemini-oauth", "codex-oauth", "opencode-oauth", "token"; secrets/agent_login.h). Empty: no login.
  std::string format;
  std::string file;      ///< the credential file, relative to $HOME on the host and in the guest
  /// `delivery: vm` (only "opencode-oauth"): no broker; the file enters the
  /// VM (session::DeliveredCredential) and the agent reaches `hosts` with
  /// it. The broker's fields below are then unused. `delivery: broker`
  /// (the default): the broker route below.
  bool entersVm = false;
  std::vector<std::string> hosts;  ///< with entersVm: the hosts the agent reaches with its login (egress)
  /// The agent's own login, run by `airlock login AGENT` on a terminal in a
  /// VM that reaches only `loginHosts` (["codex", "login", "--device-auth"]);
  /// empty: that agent is logged in with --from-host or a token only.
  std::vector<std::string> loginCommand;
  std::vector<std::string> loginHosts;  ///< the hosts its login talks to (["auth.openai.com"])
  /// Files laid over the spec's home files in the login VM only (Gemini's
  /// settings.json selecting its Google login); templates like homeFiles.
  std::map<std::string, std::string> loginHomeFiles;
  /// Told to the user before the login VM starts ("" for none): what to do
  /// once the login is done, when its command does not exit by itself.
  std::string loginNote;
  std::string tokenEnv;  ///< the variable carrying a long-lived token ("CLAUDE_CODE_OAUTH_TOKEN")
  std::string baseUrlEnv;  ///< the variable pointing the agent at the broker ("ANTHROPIC_BASE_URL")
  /// For an agent that talks HTTPS to part of its API (Codex's
  /// chatgpt_base_url): the broker also serves HTTPS at the gateway under a
  /// CA made for the session (secrets/session_tls.h). `tlsBaseUrlEnv` names
  /// the variable set to that URL (for the login's home file templates),
  /// `tlsCaEnv` the one set to the CA's PEM file in the guest. Both or neither.
  std::string tlsBaseUrlEnv;
  std::string tlsCaEnv;
  std::string upstream;    ///< the real API ("https://api.anthropic.com")
  std::vector<std::string> paths;  ///< request path prefixes the broker forwards ("/v1/")
  std::string refreshUrl;  ///< the OAuth token endpoint the host refreshes at
  std::string clientId;    ///< the agent's public OAuth client id
  /// The agent's OAuth client secret, for installed apps whose token
  /// endpoint wants one (Google's; public, shipped in the agent). "": none.
  std::string clientSecret;
  /// Where the agent caches who is logged in (not secret: ids, e-mail), so
  /// that it does not ask the API at start: `accountKey` of the JSON file
  /// `accountFile` under $HOME, copied at `--from-host` and merged into the
  /// guest's seed of that file; an empty key means the file's top level.
  /// Empty file: none.
  std::string accountFile;
  std::string accountKey;
  /// Hosts the agent asks who is logged in although the account file tells
  /// it (Gemini's www.googleapis.com userinfo): with the login, the guest's
  /// lookups of them are answered NXDOMAIN and not reported as blocked.
  std::vector<std::string> accountHosts;
  /// API-key variables not forwarded while a login is used (they would
  /// bill the API account instead of the subscription), unless named with --env.
  std::vector<std::string> billingEnv;
  /// Set for the agent while the login is used, over the spec's env
  /// (Gemini's GOOGLE_GENAI_USE_GCA=true).
  std::map<std::string, std::string> env;
  /// Home files written instead of the spec's of the same path while the
  /// login is used (Gemini's settings.json naming the Google login).
  std::map<std::string, std::string> homeFiles;

  /// A `token` login that enters the VM as the value of `tokenEnv`'s
  /// variable (no file is delivered or read back).
  bool deliveredInVariable() const { return entersVm && !tokenEnv.empty(); }
  bool operator==(const LoginSpec&) const = default;
};

/// Where the agent reads MCP servers from (issue 20, agents/mcp.h): a file
/// under $HOME that airlock fills with the user's servers in the agent's
/// format (a home file of the same path is merged into), and the arguments
/// added after defaultArgs that point the agent at it. Empty file: airlock
/// gives this agent no MCP servers.
struct McpConfig {
  std::string file;               ///< relative to $HOME (".airlock/mcp.json")
  McpFormat format = McpFormat::kMcpServersJson;  ///< how that file lists servers
  std::vector<std::string> args;  ///< e.g. ["--mcp-config", "/home/agent/.airlock/mcp.json"]

  bool operator==(const McpConfig&) const = default;
};

/// One agent: its image recipe, how to start it, its environment, its VM size
/// and the hosts it talks to.
struct AgentSpec {
  std::string name;         ///< e.g. "claude-code"; equals the spec file's base name
  std::string description;  ///< one line for `airlock agents`
  ImageRecipe image;
  /// The program and its fixed leading arguments. The agent's argv is
  /// command + defaultArgs + the user's arguments (those after `--`).
  std::vector<std::string> command;
  std::vector<std::string> defaultArgs;
  std::map<std::string, std::string> env;  ///< set for the agent before forwarded variables
  /// Host variables forwarded by value: a name, or a prefix ending in '*'.
  std::vector<std::string> envForward;
  /// Files written into the agent's $HOME (uid 1000) before it starts: path
  /// relative to $HOME -> content template (see agent_env.h for ${NAME}).
  std::map<std::string, std::string> homeFiles;
  /// Files written into $HOME only where the saved state has none (first-run
  /// answers: onboarding done, /workspace trusted), so the agent's own later
  /// edits of them are kept: path relative to $HOME -> content (a template,
  /// like homeFiles).
  std::map<std::string, std::string> seedFiles;
  /// The user's global settings copied in from the host's $HOME (memory
  /// files, filtered settings, skills and commands): never written back.
  std::vector<SettingsImport> settings;
  /// The agent's state, paths relative to $HOME (its config/data dirs and
  /// files: ".claude", ".claude.json"): saved per (agent, project) on the
  /// host when the agent exits and restored at the next run on that project
  /// (state/state_archive.h). Empty: nothing is kept between runs.
  std::vector<std::string> state;
  /// Paths under `state` never saved: the agent's credentials (a login made
  /// inside the VM stays there; the accounts of issue 15 own them).
  std::vector<std::string> stateExclude;
  int stateMaxMib = 256;    ///< cap of the saved state's file contents, MiB
  int cpus = 2;             ///< vCPUs
  int memoryMib = 4096;     ///< guest memory, MiB
  int scratchMib = 8192;    ///< scratch disk (root and /workspace upper layers, $HOME), MiB
  EgressHosts egress;
  LoginSpec login;
  McpConfig mcp;

  bool operator==(const AgentSpec&) const = default;
};

}  // namespace airlock::agents
