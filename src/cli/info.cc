// `airlock info [AGENT] [-w DIR] [--json]`: the isolation envelope of the run
// that would happen, without booting anything.

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "config/envelope.h"

namespace airlock::cli {
namespace {

struct InfoArgs {
  std::string agent = "claude-code";
  std::string workspace = ".";
  bool json = false;
  bool yes = false;
  std::string workspaceMode;
};

int runInfo(const InfoArgs& args) {
  config::ConfigLayer flags;
  if (!args.workspaceMode.empty()) flags.workspaceMode = config::parseWorkspaceMode(args.workspaceMode);
  auto effective = config::loadEffectiveConfig(args.agent, args.workspace, flags);
  if (!effective) {
    std::fprintf(stderr, "airlock: %s\n", effective.error().message.c_str());
    return effective.error().code == 1 ? exit_code::kInternal : effective.error().code;
  }
  auto backend = config::describeBackend(vm::probeHost());
  auto image = config::describeImage(*effective);
  auto envelope = config::buildEnvelope(std::move(*effective), std::move(backend), std::move(image), args.yes);
  if (args.json)
    std::printf("%s\n", config::envelopeJson(envelope).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  else
    std::fputs(config::envelopeText(envelope).c_str(), stdout);
  return 0;
}

}  // namespace

void addInfoCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<InfoArgs>();
  auto* cmd = app.add_subcommand("info", "Show the isolation envelope of `airlock run AGENT` without booting");
  cmd->footer(R"(For every value: which layer set it (built-in, user, repo, flag). Repo keys
that .airlock.yaml may not set (it can only tighten) are listed as ignored,
with the reason. Environment variables are shown by name, never by value.

Examples:
  airlock info claude-code
  airlock info codex -w ~/src/app --json)");
  cmd->add_option("agent", args->agent, "Agent name (default: claude-code)");
  cmd->add_option("-w,--workspace", args->workspace, "Project directory (default: the current directory)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--workspace-mode", args->workspaceMode, "snapshot or direct, as `airlock run` would get it")
      ->check(CLI::IsMember({"snapshot", "direct"}));
  cmd->add_flag("--yes", args->yes, "As `airlock run --yes` (acknowledges direct mode)");
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->callback([args, &exitCode] { exitCode = runInfo(*args); });
}

}  // namespace airlock::cli
