// `airlock config init [--force]`: writes a commented user config.

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "config/loader.h"
#include "config/user_config.h"

namespace airlock::cli {

void addConfigCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto* cmd = app.add_subcommand("config", "Manage airlock's user config");
  cmd->require_subcommand(1);
  auto force = std::make_shared<bool>(false);
  auto* init = cmd->add_subcommand("init", "Write a commented user config ($XDG_CONFIG_HOME/airlock/config.yaml)");
  init->add_flag("--force", *force, "Replace an existing file");
  init->callback([force, &exitCode, &host] {
    std::string path = config::userConfigPath(host.dirs.config);
    if (auto r = config::writeUserConfig(path, *force); !r) {
      std::fprintf(stderr, "airlock: %s\n", r.error().message.c_str());
      exitCode = r.error().code;
      return;
    }
    std::printf("wrote %s\n", path.c_str());
  });
}

}  // namespace airlock::cli
