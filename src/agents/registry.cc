#include "agents/registry.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "agents/builtin_specs.h"
#include "agents/spec_parser.h"
#include "common/exit_codes.h"

namespace airlock::agents {

Result<AgentRegistry> AgentRegistry::builtin() {
  AgentRegistry registry;
  for (const auto& file : builtinSpecFiles()) {
    auto spec = parseAgentSpec(file.text, file.fileName);
    if (!spec) return failWith(exit_code::kInternal, "built-in agent spec {}", spec.error().message);
    if (auto r = registry.add(std::move(*spec)); !r) return std::unexpected(r.error());
  }
  return registry;
}

Result<> AgentRegistry::add(AgentSpec spec) {
  auto at = std::lower_bound(specs_.begin(), specs_.end(), spec.name,
                             [](const AgentSpec& s, const std::string& name) { return s.name < name; });
  if (at != specs_.end() && at->name == spec.name)
    return failWith(exit_code::kUsage, "agent '{}' is defined twice", spec.name);
  specs_.insert(at, std::move(spec));
  return {};
}

void AgentRegistry::put(AgentSpec spec) {
  auto at = std::lower_bound(specs_.begin(), specs_.end(), spec.name,
                             [](const AgentSpec& s, const std::string& name) { return s.name < name; });
  if (at != specs_.end() && at->name == spec.name)
    *at = std::move(spec);
  else
    specs_.insert(at, std::move(spec));
}

Result<AgentSpec> AgentRegistry::find(std::string_view name) const {
  for (const auto& spec : specs_) {
    if (spec.name == name) return spec;
  }
  return failWith(exit_code::kUsage, "unknown agent '{}'; known agents: {}", name, fmt::join(names(), ", "));
}

std::vector<std::string> AgentRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& spec : specs_) out.push_back(spec.name);
  return out;
}

}  // namespace airlock::agents
