#pragma once
// A session plan: everything decided before anything is created. The CLI
// builds it from flags, config and the agent spec (cli/run.cc,
// cli/run_image.cc); the Runner (session/runner.h) carries it out.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "state/settings_import.h"
#include "state/state_archive.h"
#include "vm/launch_options.h"
#include "vm/protocol.h"
#include "workspace/git_import.h"
#include "workspace/review.h"

namespace airlock::session {

/// What /workspace is in the guest.
enum class WorkspaceMode {
  kNone,      ///< no /workspace
  kShared,    ///< the live directory shared read-only, no review (`run-image -w DIR`)
  kSnapshot,  ///< a private snapshot; the changes go through the review gate
  kDirect,    ///< the live directory shared read-write, no review (--workspace-mode=direct)
};

/// Where the root filesystem comes from.
struct ImageSource {
  enum class Kind {
    kPath,        ///< `value` is a rootfs directory or an erofs image file (the `image` config key)
    kRootfsDir,   ///< `value` is a rootfs directory (run-image --rootfs)
    kErofs,       ///< `value` is a ready erofs image file (run-image's pulled image)
    kReference,   ///< `value` is an OCI image reference (pulled when missing)
    kAgentBuild,  ///< the agent's own image, built on first use (`value` names the agent)
  };
  Kind kind = Kind::kPath;
  std::string value;  ///< never empty
};

/// A file written into the agent's home in the guest before it starts.
struct HomeFile {
  std::string path;  ///< relative to the home directory
  std::string content;
};

/// A login credential in the VM: one that has to enter it (issue 15, item
/// 4: an agent the credential broker cannot serve, like OpenCode's ChatGPT
/// login), or one the agent's own login makes there (`airlock login` in a
/// VM: `content` none). A delivered one is written on the guest's /run
/// tmpfs (guest::kCredentialDir, 0700; the file 0600; never the scratch
/// disk, and the guest has no swap) and linked at `path` in $HOME. Either
/// is never saved with the state, and is read back when the command exits
/// (the agent may have rotated its tokens, or just logged in).
struct DeliveredCredential {
  std::string path;  ///< relative to $HOME (".local/share/opencode/auth.json")
  /// The agent's credential file, real tokens included; none: nothing is
  /// delivered, the command makes it.
  std::optional<std::string> content;
  size_t maxBytes = 64 * 1024;  ///< the most read back; a larger file is not kept
  /// Gets the file as the agent left it, and its account file ("" when
  /// there is none, or it could not be read: at most maxBytes too); true
  /// when it replaced the stored login. Errors: it was not kept (the stored
  /// login stays; the user is told).
  std::function<Result<bool>(std::string_view content, std::string_view account)> returned;
  /// Shown when `returned` kept it ("" for none).
  std::string keptNotice;
  /// Relative to $HOME, the file where the agent caches who is logged in
  /// (".claude.json"), read back with the credential; "" for none.
  std::string accountPath;
  /// Gets why the file could not be read back (none, over maxBytes, the
  /// guest too slow), when the caller tells the user itself; unset: a
  /// warning says it.
  std::function<void(const Error& why)> unreadable;
};

/// How the review after the command decides.
struct ReviewPolicy {
  workspace::ReviewMode mode = workspace::ReviewMode::Interactive;
  std::string modeName = "interactive";  ///< as the user gave it, for messages
  bool acceptFailed = false;             ///< --accept-failed: auto/all flush even when the command failed
  std::string who = "the agent";         ///< what ran, for messages ("the command" for run-image)
  /// What happens to the agent's commits (`--git`): refs/airlock/<name>/... by default.
  workspace::GitImportMode gitImport = workspace::GitImportMode::kRefsOnly;
};

/// The agent's state kept between runs on one project (issue 16): restored
/// into $HOME before the agent starts (before the home files, which win),
/// saved when it exits (before the VM stops).
struct StatePlan {
  std::string dir;                 ///< the (agent, project) directory; the saved tree is dir/home
  std::string project;             ///< the workspace's real path, recorded in dir/project
  std::vector<std::string> paths;  ///< $HOME-relative paths (AgentSpec::state)
  state::StateLimits limits;
  std::vector<std::string> excluded;  ///< never saved (AgentSpec::stateExclude: credentials)
};

/// The user's own agent settings (state/settings_import.h), copied into
/// $HOME after the saved state and before the seed and home files.
struct SettingsPlan {
  /// The spec's settings paths: whatever the restored state has there is
  /// removed first, and they are never saved with the state.
  std::vector<std::string> paths;
  std::vector<state::SettingsEntry> entries;  ///< what was found on the host
};

/// Everything a session does, decided before anything is created: the
/// workspace and how the guest sees it, the image, the machine, the command
/// and its home files, and the review policy.
struct Plan {
  /// The session's name (`--name`, unique among the sessions, checked by
  /// validSessionName()); "" = label + "-" + 6 hex digits of the session id.
  std::string name;
  std::string label;  ///< what runs, for `airlock ls`: the agent's name, or "run-image"
  /// A detached session (`run -d`, recorded for `airlock ls`): its
  /// supervisor exports the changes and leaves them for `airlock review NAME`.
  bool detached = false;
  std::string workspace;  ///< the project directory as given ("" with kNone)
  WorkspaceMode workspaceMode = WorkspaceMode::kNone;
  std::vector<std::string> excludes;  ///< extra ignore patterns of the snapshot and the review
  ImageSource image;
  /// The image was not built for the agent (a rootfs directory, an OCI
  /// image) or not by root (its files are all root's), or the agent runs as
  /// another uid than the image's agent user (direct mode: the workspace
  /// owner's): its home is made exec.uid's before anything is written there.
  bool chownHome = false;
  /// Machine size, accelerator, scratch disk, egress policy, published
  /// ports. The runner fills in the root image, the workspace share and the
  /// egress log path.
  vm::LaunchOptions machine;
  // Progress lines of the steps ("" = the step is only logged).
  std::string imageLine;                 ///< "image claude-code:1"
  std::string bootLine;                  ///< "booting claude-code (2 vCPUs, 2048 MiB, egress standard)"
  std::string commandLine;               ///< "running claude-code"
  bool machineProgress = false;          ///< show the machine's own progress lines ("booting VM (TCG emulation)")
  std::vector<HomeFile> homeFiles;       ///< written as exec.uid before the command starts
  std::vector<HomeFile> seedFiles;       ///< written as exec.uid where the restored state has nothing
  std::optional<SettingsPlan> settings;  ///< none: settings_import is off
  std::optional<StatePlan> state;        ///< none: nothing kept between runs (run-image, --fresh)
  std::optional<DeliveredCredential> credential;  ///< none: no login enters the VM
  /// The agent's home on a tmpfs (the image's files copied in first): what
  /// the command writes there never reaches the scratch disk (a login VM).
  bool homeOnTmpfs = false;
  /// PEM certificates the agent trusts besides the image's (extra_ca_certs):
  /// with the image's bundle, written to guest::kCaBundle as the agent
  /// before the command starts. "": none.
  std::string extraCaCertificates;
  protocol::ExecRequest exec;   ///< the command (argv, env, uid, cwd)
  bool pty = false;             ///< attach through a pty (raw mode) instead of pipes
  ReviewPolicy review;          ///< with kSnapshot
  bool egressLogShown = false;  ///< --egress-log: the log goes to stderr (not only the session's file)
};

}  // namespace airlock::session
