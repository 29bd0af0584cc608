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

/// How one can sign in to the agent: "api-key" (a key forwarded by value)
/// for an agent that forwards variables, then "account" (a login kept on the host, the broker
/// puts it on the wire) or "account-in-vm" (a login whose file enters the
/// VM; LoginSpec::entersVm) when the spec has a login.
std::vector<std::string> loginKinds(const agents::AgentSpec& spec);

/// One object per agent: name, description, npm_package, version, vcpus
/// (the key `airlock info --json` and the config use), memory_mib, logins
/// (loginKinds), model_hosts and extra_hosts (its default egress), and
/// image_bytes: the size of its image in `cacheDir`, null when it is not
/// built yet or comes from a registry (`image: REFERENCE`).
nlohmann::json agentsListJson(const std::vector<agents::AgentSpec>& specs, const std::string& cacheDir);

/// The built-in agents plus the user config's custom agents; just the
/// built-in ones when the user config does not load (the verb reports why).
Result<agents::AgentRegistry> knownAgents(const HostContext& host);

}  // namespace airlock::cli
