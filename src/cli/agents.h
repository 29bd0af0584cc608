#pragma once
// What `airlock agents --json` prints, apart from printing it, and the
// agents a verb can name.

#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent_spec.h"
#include "agents/registry.h"
#include "common/error.h"
#include "common/host_context.h"

namespace airlock::cli {

/// One object per agent: name, description, npm_package, version, vcpus
/// (the key `airlock info --json` and the config use), memory_mib.
nlohmann::json agentsListJson(const std::vector<agents::AgentSpec>& specs);

/// The built-in agents plus the user config's custom agents; just the
/// built-in ones when the user config does not load (the verb reports why).
Result<agents::AgentRegistry> knownAgents(const HostContext& host);

}  // namespace airlock::cli
