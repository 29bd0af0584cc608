#pragma once
// The agents airlock knows by name: the built-in specs (compiled in), and
// any added at run time (custom agents).

#include <string>
#include <string_view>
#include <vector>

#include "agents/agent_spec.h"
#include "common/error.h"

namespace airlock::agents {

/// Agent specs by name, ordered by name.
class AgentRegistry {
 public:
  /// A registry holding the built-in specs (src/agents/builtin/*.yaml).
  /// Fails only if an embedded spec does not parse (a build defect).
  static Result<AgentRegistry> builtin();

  /// Adds `spec`; fails (kUsage) when an agent of that name is already known.
  Result<> add(AgentSpec spec);

  /// Puts `spec` in place of the known agent of the same name, or adds it
  /// when there is none.
  void put(AgentSpec spec);

  /// The spec named `name`; an unknown name is an error (kUsage) listing the
  /// known names: "unknown agent 'cluade'; known agents: claude-code, codex, ...".
  Result<AgentSpec> find(std::string_view name) const;

  /// All specs, ordered by name.
  const std::vector<AgentSpec>& all() const { return specs_; }

  /// All names, ordered.
  std::vector<std::string> names() const;

 private:
  std::vector<AgentSpec> specs_;
};

}  // namespace airlock::agents
