#pragma once
// Images for a session (session::ImageProvider) the way the CLI gets them:
// a reference pulled and verified per the registry flags and the config, or
// the agent's own image built on first use.

#include <string>

#include "agents/agent_spec.h"
#include "cli/registry_flags.h"
#include "common/host_context.h"
#include "config/settings.h"
#include "session/runner.h"
#include "session/ui.h"

namespace airlock::cli {

/// Pulls (kReference), builds (kAgentBuild) or turns a rootfs directory into
/// (kRootfsDir, a directory kPath) the erofs image of a session.
class CliImageProvider final : public session::ImageProvider {
 public:
  /// `host`, `registry` and `ui` must outlive the provider. `spec` is the
  /// agent whose image kAgentBuild builds.
  CliImageProvider(const HostContext& host, const RegistryFlags& registry, config::Settings settings,
                   agents::AgentSpec spec, session::Ui& ui, bool quiet)
      : host_(host), registry_(registry), settings_(std::move(settings)), spec_(std::move(spec)), ui_(ui),
        quiet_(quiet) {}
  Result<std::string> erofsImage(const session::ImageSource& source) override;

 private:
  const HostContext& host_;
  const RegistryFlags& registry_;
  config::Settings settings_;
  agents::AgentSpec spec_;
  session::Ui& ui_;
  bool quiet_;
};

}  // namespace airlock::cli
