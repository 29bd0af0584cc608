// `airlock __janitor`: internal; see vm/janitor.h.

#include "cli/commands.h"
#include "vm/janitor.h"

namespace airlock::cli {

void addJanitorCommand(CLI::App& app, int& exitCode) {
  auto* cmd = app.add_subcommand("__janitor", "internal: cleans up after a killed airlock");
  cmd->group("");
  cmd->callback([&exitCode] { exitCode = vm::runJanitor(3); });
}

}  // namespace airlock::cli
