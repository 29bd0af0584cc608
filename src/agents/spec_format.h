#pragma once
// Writes an agent spec back as YAML in the schema parseAgentSpec() reads
// (for `airlock agents show`); parsing the output gives the same spec.

#include <string>

#include "agents/agent_spec.h"

namespace airlock::agents {

/// The spec as YAML text, keys in schema order, optional keys left out when
/// they hold their defaults (native_package/native_version empty).
std::string formatAgentSpec(const AgentSpec& spec);

}  // namespace airlock::agents
