#pragma once
// The built-in agent specs: the YAML files of src/agents/builtin/, embedded
// into the binary at build time (embed_specs.cmake generates the definition).

#include <span>
#include <string_view>

namespace airlock::agents {

/// One embedded spec file.
struct EmbeddedSpec {
  std::string_view fileName;  ///< e.g. "claude-code.yaml"
  std::string_view text;      ///< the file's contents
};

/// Every file of src/agents/builtin/, ordered by file name.
std::span<const EmbeddedSpec> builtinSpecFiles();

}  // namespace airlock::agents
