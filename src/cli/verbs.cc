#include "cli/commands.h"

namespace airlock::cli {

void addAllCommands(CLI::App& app, int& exitCode, const HostContext& host,
                    const std::vector<std::string>& afterDoubleDash, const std::vector<std::string>& invocation) {
  addRunImageCommand(app, exitCode, host, afterDoubleDash, invocation);
  addRunCommand(app, exitCode, host, afterDoubleDash, invocation);
  addSessionCommands(app, exitCode, host, afterDoubleDash);
  addDiffCommand(app, exitCode, host);
  addSnapshotCommand(app, exitCode, host);
  addReviewCommand(app, exitCode, host);
  addJanitorCommand(app, exitCode);
  addSystemCommand(app, exitCode, host);
  addAgentsCommand(app, exitCode, host);
  addImageCommand(app, exitCode, host);
  addInfoCommand(app, exitCode, host);
  addDoctorCommand(app, exitCode, host);
  addConfigCommand(app, exitCode, host);
  addSecretCommand(app, exitCode, host, afterDoubleDash);
  addLoginCommands(app, exitCode, host, afterDoubleDash);
  addStateCommand(app, exitCode, host);
  appendExitCodeFooters(app);
}

}  // namespace airlock::cli
