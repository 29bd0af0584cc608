#pragma once
// The agent's environment: which host variables a spec forwards, and the
// ${NAME} / ${NAME:-default} templates of its home files. Pure functions.
//
// Template syntax (the shell's, restricted): `${NAME}` is the value of NAME,
// empty when unset; `${NAME:-default}` is the value of NAME, or `default`
// when NAME is unset or empty. NAME is [A-Za-z_][A-Za-z0-9_]*; `default`
// runs to the first '}'. A '$' not followed by '{' is kept as is.

#include <map>
#include <string>
#include <string_view>

#include "agents/agent_spec.h"
#include "common/error.h"

namespace airlock::agents {

/// Environment variables by name.
using EnvMap = std::map<std::string, std::string>;

/// True when `name` is a variable name: [A-Za-z_][A-Za-z0-9_]*.
bool isEnvName(std::string_view name);

/// True when `name` matches one of `patterns`: equal to one, or, for one
/// ending in '*', starting with the part before the '*'.
bool matchesEnvPattern(const std::vector<std::string>& patterns, std::string_view name);

/// True when `name` matches one of the spec's env_forward entries
/// (matchesEnvPattern).
bool forwardsEnv(const AgentSpec& spec, std::string_view name);

/// The subset of `hostEnv` the spec forwards.
EnvMap forwardedEnv(const AgentSpec& spec, const EnvMap& hostEnv);

/// Checks the template syntax of `text`; the error names the offset and the
/// fault ("unterminated ${", "bad variable name ...").
Result<> checkTemplate(std::string_view text);

/// Replaces every ${NAME}, ${NAME:-default} and ${NAME: -N} (the value's
/// last N bytes, as in bash) of `text` from `env`.
/// A malformed reference (see checkTemplate) is kept as is.
std::string expandTemplate(std::string_view text, const EnvMap& env);

/// Files (path -> template: a spec's homeFiles or seedFiles) with their
/// templates expanded from `env` (the environment the agent gets: spec env
/// plus forwarded variables).
std::map<std::string, std::string> expandFiles(const std::map<std::string, std::string>& files, const EnvMap& env);

}  // namespace airlock::agents
