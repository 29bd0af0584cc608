#pragma once
// Strict YAML parsing of agent specs.
//
// Schema (one file per agent, named <name>.yaml):
//
//   name: claude-code                      # required, [a-z0-9-], equals the file's base name
//   description: Anthropic's Claude Code   # required
//   image:                                 # required
//     npm_package: "@anthropic-ai/claude-code"   # required
//     version: "2.1.332"                         # required, pinned
//     native_package: "@anthropic-ai/claude-code-linux-x64"   # optional
//     native_version: "2.1.332"                  # optional, default: version
//     binary: claude                             # required, relative path inside the package
//     install_as: claude                         # required, file name under /usr/local/bin
//     node: false                                # optional, default false
//   command: [claude]                      # required, non-empty
//   default_args: [...]                    # optional
//   env: {NAME: "value"}                   # optional
//   env_forward: [NAME, "PREFIX_*"]        # optional
//   home_files: {".claude.json": '...'}    # optional; values may use ${NAME} / ${NAME:-default}
//   cpus: 2                                # optional, 1-64, default 2
//   memory_mib: 4096                       # optional, 256-262144, default 4096
//   scratch_mib: 8192                      # optional, 512-1048576, default 8192
//   egress:                                # optional
//     model_hosts: [api.anthropic.com]
//     extra_hosts: []
//
// Unknown keys, duplicate keys, wrong types and malformed values are errors
// naming the file, line and key.

#include <string_view>

#include "agents/agent_spec.h"
#include "common/error.h"

namespace airlock::agents {

/// Parses the YAML text of one spec. `fileName` (e.g. "claude-code.yaml") is
/// used in error messages, and its base name must equal the spec's `name`.
/// Errors carry exit_code::kUsage and read "claude-code.yaml:3:1: unknown key
/// 'imgae' (known keys: ...)".
Result<AgentSpec> parseAgentSpec(std::string_view yamlText, std::string_view fileName);

}  // namespace airlock::agents
