#pragma once
// What `airlock agents --json` prints, apart from printing it.

#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent_spec.h"

namespace airlock::cli {

/// One object per agent: name, description, npm_package, version, vcpus
/// (the key `airlock info --json` and the config use), memory_mib.
nlohmann::json agentsListJson(const std::vector<agents::AgentSpec>& specs);

}  // namespace airlock::cli
