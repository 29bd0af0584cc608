// `airlock agents` and `airlock agents show NAME`: the agents airlock knows.
//
//   airlock agents [--json]             table: name, version, logins, model hosts, image size, description
//   airlock agents show NAME [--json]   one spec, as YAML (the schema of src/agents/builtin/*.yaml)

#include "cli/agents.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/agent_spec.h"
#include "agents/registry.h"
#include "agents/spec_format.h"
#include "cli/commands.h"
#include "cli/report.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "config/effective.h"
#include "config/loader.h"
#include "image/recipe.h"

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
  if (s.image.baseOnly()) image = json::object();
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

/// The size of `spec`'s image in `cacheDir`, or nothing when it is not
/// built (or comes from a registry, stored by digest).
std::optional<uint64_t> imageBytes(const agents::AgentSpec& spec, const std::string& cacheDir) {
  if (!spec.image.reference.empty()) return std::nullopt;  // in the OCI image store, by digest
  struct stat st {};
  if (::stat(image::agentImagePath(cacheDir, spec).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// The first host, and how many more (`--json` lists them all).
std::string hostsCell(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return "-";
  return hosts.size() == 1 ? hosts[0] : fmt::format("{} +{}", hosts[0], hosts.size() - 1);
}

int listAgents(const AgentsArgs& args, const HostContext& host) {
  auto registry = knownAgents(host);
  if (!registry) return reportError(registry.error());
  const auto& specs = registry->all();
  if (args.json) {
    std::printf("%s\n", dump(agentsListJson(specs, host.dirs.cache)).c_str());
    return 0;
  }
  struct Row {
    std::string name, version, logins, hosts, image, description;
  };
  std::vector<Row> rows = {{"NAME", "VERSION", "LOGIN", "MODEL HOSTS", "IMAGE", "DESCRIPTION"}};
  for (const auto& s : specs) {
    auto bytes = imageBytes(s, host.dirs.cache);
    const std::string logins = joined(loginKinds(s));
    rows.push_back({s.name, s.image.version.empty() ? "-" : s.image.version, logins.empty() ? "-" : logins,
                    hostsCell(s.egress.modelHosts), bytes ? formatBytes(*bytes) : "not built", s.description});
  }
  size_t w[5] = {};
  for (const auto& r : rows) {
    const std::string* cells[5] = {&r.name, &r.version, &r.logins, &r.hosts, &r.image};
    for (int i = 0; i < 5; ++i) w[i] = std::max(w[i], cells[i]->size());
  }
  for (const auto& r : rows)
    std::printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", int(w[0]), r.name.c_str(), int(w[1]), r.version.c_str(),
                int(w[2]), r.logins.c_str(), int(w[3]), r.hosts.c_str(), int(w[4]), r.image.c_str(),
                r.description.c_str());
  return 0;
}

int showAgent(const AgentsArgs& args, const HostContext& host) {
  auto registry = knownAgents(host);
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

std::vector<std::string> loginKinds(const agents::AgentSpec& spec) {
  std::vector<std::string> kinds;
  if (!spec.envForward.empty()) kinds.push_back("api-key");
  if (!spec.login.format.empty()) kinds.push_back(spec.login.entersVm ? "account-in-vm" : "account");
  return kinds;
}

nlohmann::json agentsListJson(const std::vector<agents::AgentSpec>& specs, const std::string& cacheDir) {
  json list = json::array();
  for (const auto& s : specs) {
    auto bytes = imageBytes(s, cacheDir);
    list.push_back({{"name", s.name},
                    {"description", s.description},
                    {"npm_package", s.image.npmPackage},
                    {"version", s.image.version},
                    {"vcpus", s.cpus},
                    {"memory_mib", s.memoryMib},
                    {"logins", loginKinds(s)},
                    {"model_hosts", s.egress.modelHosts},
                    {"extra_hosts", s.egress.extraHosts},
                    {"image_bytes", bytes ? json(*bytes) : json(nullptr)}});
  }
  return list;
}

void addAgentsCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto args = std::make_shared<AgentsArgs>();
  auto* cmd = app.add_subcommand("agents", "List the agents airlock can run: built-in and your config's own");
  cmd->footer(R"(LOGIN: api-key (a key forwarded from your environment), account (`airlock login AGENT`; the
login stays on the host), account-in-vm (the login's file enters the VM on a tmpfs).
MODEL HOSTS: what the agent's egress allows for its model API (+N: more; `--json` lists them, and
`airlock info AGENT` the whole egress).
IMAGE: its root image's size, or "not built" (the first run, or `airlock image build AGENT`, builds it).)");
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->require_subcommand(0, 1);
  auto* show = cmd->add_subcommand("show", "Print one agent's spec as YAML");
  show->add_option("NAME", args->name, "Agent name (see `airlock agents`)")->required();
  show->add_flag("--json", args->showJson, "Print JSON instead of YAML");
  show->callback([args, &exitCode, &host] { exitCode = showAgent(*args, host); });
  cmd->callback([args, cmd, &exitCode, &host] {
    if (cmd->get_subcommands().empty()) exitCode = listAgents(*args, host);
  });
}

}  // namespace airlock::cli
