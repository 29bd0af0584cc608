#pragma once
// Images for a session (session::ImageProvider) the way the CLI gets them:
// a reference pulled and verified per the registry flags and the config, or
// the agent's own image built on first use.

#include <string>

#include "agents/agent_spec.h"
#include "cli/registry_flags.h"
#include "config/settings.h"
#include "session/runner.h"
#include "session/ui.h"

namespace airlock::cli {

/// Pulls (kReference) or builds (kAgentBuild) the image of a session.
class CliImageProvider final : public session::ImageProvider {
 public:
  /// All references must outlive the provider. `spec` is the agent whose
  /// image kAgentBuild builds.
  CliImageProvider(const RegistryFlags& registry, const config::Settings& settings, const agents::AgentSpec& spec,
                   session::Ui& ui, bool quiet)
      : registry_(registry), settings_(settings), spec_(spec), ui_(ui), quiet_(quiet) {}
  Result<std::string> erofsImage(const session::ImageSource& source) override;

 private:
  const RegistryFlags& registry_;
  const config::Settings& settings_;
  const agents::AgentSpec& spec_;
  session::Ui& ui_;
  bool quiet_;
};

}  // namespace airlock::cli
