#pragma once
// One function per verb: each registers its subcommand on the root app and
// sets a callback that stores the verb's exit code in `exitCode`. `host` (for
// the verbs that need host facts) is the context main() read once; the
// callbacks keep a reference to it, and it outlives the parse that runs them.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/host_context.h"

namespace airlock::cli {

/// `airlock run-image`: boot a rootfs and run one command (src/cli/run_image.cc).
/// `afterDoubleDash` holds the arguments after the first `--` on the command
/// line (the guest command), which main() keeps away from the parser;
/// `invocation` is the whole command line, which -d runs again as the
/// session's supervisor (cli/detach.h).
void addRunImageCommand(CLI::App& app, int& exitCode, const HostContext& host,
                        const std::vector<std::string>& afterDoubleDash, const std::vector<std::string>& invocation);

/// `airlock run AGENT`: the whole job (src/cli/run.cc). `afterDoubleDash`
/// are the agent's own arguments; `invocation` as for addRunImageCommand.
void addRunCommand(CLI::App& app, int& exitCode, const HostContext& host,
                   const std::vector<std::string>& afterDoubleDash, const std::vector<std::string>& invocation);

/// The verbs of sessions: `airlock ls`, `stop`, `rm` (src/cli/session_cmd.cc),
/// `attach`, `exec`, `shell` and `logs`. `afterDoubleDash`: exec's command.
void addSessionCommands(CLI::App& app, int& exitCode, const HostContext& host,
                        const std::vector<std::string>& afterDoubleDash);

/// `airlock attach`, `exec`, `shell` and `logs` (src/cli/attach_cmd.cc), added by addSessionCommands.
void addAttachCommands(CLI::App& app, int& exitCode, const HostContext& host,
                       const std::vector<std::string>& afterDoubleDash);

/// `airlock review`: review a change set against a workspace and flush (src/cli/review.cc).
void addReviewCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock diff NAME`: a session's changes, read-only, also while it runs (src/cli/diff_cmd.cc).
void addDiffCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock snapshot`: a workspace's snapshot in a session directory (src/cli/snapshot.cc).
void addSnapshotCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// The exit-code table (common/exit_codes.h) as a --help footer.
std::string exitCodeFooter();

/// Ends the --help of APP and of every verb below it with exitCodeFooter(),
/// after the verb's own footer. Call once, after every command is added.
void appendExitCodeFooters(CLI::App& app);

/// `airlock agents` and `airlock agents show NAME`: the known agents (src/cli/agents.cc).
void addAgentsCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock image build AGENT`: build an agent's local erofs image (src/cli/image.cc).
void addImageCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock info [AGENT]`: the isolation envelope of a run, without booting (src/cli/info.cc).
void addInfoCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock doctor`: host checks with a fix for each problem (src/cli/doctor.cc).
void addDoctorCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock config init`: write a commented user config (src/cli/config_cmd.cc).
void addConfigCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock image pull|ls|rm|prune|inspect`: the OCI image store, added to
/// the `image` subcommand (src/cli/image_store_cmd.cc).
void addImageStoreCommands(CLI::App& image, int& exitCode, const HostContext& host);

/// `airlock image save|load`: OCI image layout tars, added to the `image`
/// subcommand (src/cli/image_archive_cmd.cc).
void addImageArchiveCommands(CLI::App& image, int& exitCode, const HostContext& host);

/// `airlock secret set|ls|rm`: secrets kept on the host (src/cli/secret_cmd.cc).
/// `afterDoubleDash`: anything there is refused (a value must not be in argv).
void addSecretCommand(CLI::App& app, int& exitCode, const HostContext& host,
                      const std::vector<std::string>& afterDoubleDash);

/// `airlock login AGENT` and `airlock logout AGENT`: account logins kept on
/// the host and brokered into runs (src/cli/login_cmd.cc).
/// `afterDoubleDash`: anything there is refused (a token must not be in argv).
void addLoginCommands(CLI::App& app, int& exitCode, const HostContext& host,
                      const std::vector<std::string>& afterDoubleDash);

/// `airlock state ls|rm`: agent state kept per project (src/cli/state_cmd.cc).
void addStateCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock system df|prune`: disk usage and pruning (src/cli/system.cc).
void addSystemCommand(CLI::App& app, int& exitCode, const HostContext& host);

/// `airlock system kernel build`: airlock's own guest kernel, added to the
/// `system` subcommand (src/cli/kernel_cmd.cc).
void addKernelCommand(CLI::App& system, int& exitCode, const HostContext& host);

/// `airlock __janitor`: hidden; cleans up a killed run (src/cli/janitor_cmd.cc).
void addJanitorCommand(CLI::App& app, int& exitCode);

/// Every verb above on APP, each --help ending with the exit-code table
/// (src/cli/verbs.cc); the arguments as for addRunImageCommand.
void addAllCommands(CLI::App& app, int& exitCode, const HostContext& host,
                    const std::vector<std::string>& afterDoubleDash, const std::vector<std::string>& invocation);

}  // namespace airlock::cli
