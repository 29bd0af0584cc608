// `airlock agents` and `airlock agents show NAME`: the agents airlock knows.
//
//   airlock agents [--json]             table: name, description, version, vCPUs, memory
//   airlock agents show NAME [--json]   one spec, as YAML (the schema of src/agents/builtin/*.yaml)

#include "cli/agents.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agents/agent_spec.h"
#include "agents/registry.h"
#include "agents/spec_format.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/exit_codes.h"
#include "config/effective.h"
#include "config/loader.h"

namespace airlock::cli {
namespace {

using json = nlohmann::json;

struct AgentsArgs {
  bool json = false;
  std::string name;
  bool showJson = false;
};

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

json settingsJson(const std::vector<agents::SettingsImport>& settings) {
  json out = json::array();
  for (const auto& entry : settings) {
    if (entry.keys.empty())
      out.push_back(entry.path);
    else
      out.push_back({{"path", entry.path}, {"keys", entry.keys}});
  }
  return out;
}

json specJson(const agents::AgentSpec& s) {
  json image = {{"npm_package", s.image.npmPackage}, {"version", s.image.version}, {"binary", s.image.binary},
                {"install_as", s.image.installAs},   {"node", s.image.node}};
  if (!s.image.nativePackage.empty()) image["native_package"] = s.image.nativePackage;
  if (!s.image.nativeVersion.empty()) image["native_version"] = s.image.nativeVersion;
  if (!s.image.reference.empty()) image = s.image.reference;
  return {{"name", s.name},
          {"description", s.description},
          {"image", image},
          {"command", s.command},
          {"default_args", s.defaultArgs},
          {"env", s.env},
          {"env_forward", s.envForward},
          {"home_files", s.homeFiles},
          {"seed_files", s.seedFiles},
          {"settings", settingsJson(s.settings)},
          {"state", s.state},
          {"state_exclude", s.stateExclude},
          {"state_max_mib", s.stateMaxMib},
          {"cpus", s.cpus},
          {"memory_mib", s.memoryMib},
          {"scratch_mib", s.scratchMib},
          {"egress", {{"model_hosts", s.egress.modelHosts}, {"extra_hosts", s.egress.extraHosts}}}};
}

int listAgents(const AgentsArgs& args) {
  auto registry = agents::AgentRegistry::builtin();
  if (!registry) return reportError(registry.error());
  const auto& specs = registry->all();
  if (args.json) {
    std::printf("%s\n", dump(agentsListJson(specs)).c_str());
    return 0;
  }
  size_t nameWidth = 4, descWidth = 11, versionWidth = 7;
  for (const auto& s : specs) {
    nameWidth = std::max(nameWidth, s.name.size());
    descWidth = std::max(descWidth, s.description.size());
    versionWidth = std::max(versionWidth, s.image.version.size());
  }
  std::printf("%-*s  %-*s  %-*s  %5s  %10s\n", int(nameWidth), "NAME", int(descWidth), "DESCRIPTION",
              int(versionWidth), "VERSION", "VCPUS", "MEMORY");
  for (const auto& s : specs) {
    std::printf("%-*s  %-*s  %-*s  %5d  %6d MiB\n", int(nameWidth), s.name.c_str(), int(descWidth),
                s.description.c_str(), int(versionWidth), s.image.version.c_str(), s.cpus, s.memoryMib);
  }
  return 0;
}

int showAgent(const AgentsArgs& args) {
  auto registry = agents::AgentRegistry::builtin();
  if (!registry) return reportError(registry.error());
  auto spec = registry->find(args.name);
  if (!spec) return reportError(spec.error());
  if (args.showJson) {
    std::printf("%s\n", dump(specJson(*spec)).c_str());
  } else {
    std::fputs(agents::formatAgentSpec(*spec).c_str(), stdout);
  }
  return 0;
}

}  // namespace

Result<agents::AgentRegistry> knownAgents(const HostContext& host) {
  std::string path = config::userConfigPath(host.dirs.config);
  auto user = config::loadConfigFile(path);
  if (!user) return agents::AgentRegistry::builtin();
  auto registry = config::registryWithCustomAgents(*user, path);
  return registry ? registry : agents::AgentRegistry::builtin();
}

nlohmann::json agentsListJson(const std::vector<agents::AgentSpec>& specs) {
  json list = json::array();
  for (const auto& s : specs)
    list.push_back({{"name", s.name},
                    {"description", s.description},
                    {"npm_package", s.image.npmPackage},
                    {"version", s.image.version},
                    {"vcpus", s.cpus},
                    {"memory_mib", s.memoryMib}});
  return list;
}

void addAgentsCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<AgentsArgs>();
  auto* cmd = app.add_subcommand("agents", "List the agents airlock can run (built-in specs)");
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->require_subcommand(0, 1);
  auto* show = cmd->add_subcommand("show", "Print one agent's spec as YAML");
  show->add_option("NAME", args->name, "Agent name (see `airlock agents`)")->required();
  show->add_flag("--json", args->showJson, "Print JSON instead of YAML");
  show->callback([args, &exitCode] { exitCode = showAgent(*args); });
  cmd->callback([args, cmd, &exitCode] {
    if (cmd->get_subcommands().empty()) exitCode = listAgents(*args);
  });
}

}  // namespace airlock::cli
