#include "agents/spec_format.h"

#include <yaml-cpp/yaml.h>

namespace airlock::agents {
namespace {

void emitList(YAML::Emitter& out, const char* key, const std::vector<std::string>& items) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& item : items) out << YAML::DoubleQuoted << item;
  out << YAML::EndSeq;
}

void emitMap(YAML::Emitter& out, const char* key, const std::map<std::string, std::string>& entries) {
  out << YAML::Key << key << YAML::Value;
  if (entries.empty()) out << YAML::Flow;
  out << YAML::BeginMap;
  for (const auto& [k, v] : entries) {
    out << YAML::Key << YAML::DoubleQuoted << k << YAML::Value;
    if (v.find('\n') != std::string::npos) {
      out << YAML::Literal << v;
    } else {
      out << YAML::SingleQuoted << v;
    }
  }
  out << YAML::EndMap;
}

}  // namespace

std::string formatAgentSpec(const AgentSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "description" << YAML::Value << spec.description;
  if (!spec.image.reference.empty()) {
    out << YAML::Key << "image" << YAML::Value << spec.image.reference;
  } else if (!spec.image.pypiPackage.empty()) {
    out << YAML::Key << "image" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "pypi_package" << YAML::Value << spec.image.pypiPackage;
    out << YAML::Key << "version" << YAML::Value << YAML::DoubleQuoted << spec.image.version;
    out << YAML::Key << "binary" << YAML::Value << spec.image.binary;
    out << YAML::Key << "install_as" << YAML::Value << spec.image.installAs;
    out << YAML::EndMap;
  } else if (spec.image.baseOnly()) {
    out << YAML::Key << "image" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  } else {
    out << YAML::Key << "image" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "npm_package" << YAML::Value << YAML::DoubleQuoted << spec.image.npmPackage;
    out << YAML::Key << "version" << YAML::Value << YAML::DoubleQuoted << spec.image.version;
    if (!spec.image.nativePackage.empty())
      out << YAML::Key << "native_package" << YAML::Value << YAML::DoubleQuoted << spec.image.nativePackage;
    if (!spec.image.nativeVersion.empty())
      out << YAML::Key << "native_version" << YAML::Value << YAML::DoubleQuoted << spec.image.nativeVersion;
    out << YAML::Key << "binary" << YAML::Value << spec.image.binary;
    out << YAML::Key << "install_as" << YAML::Value << spec.image.installAs;
    out << YAML::Key << "node" << YAML::Value << spec.image.node;
    if (!spec.image.archive.empty()) out << YAML::Key << "archive" << YAML::Value << spec.image.archive;
    out << YAML::EndMap;
  }
  emitList(out, "command", spec.command);
  emitList(out, "default_args", spec.defaultArgs);
  emitMap(out, "env", spec.env);
  emitList(out, "env_forward", spec.envForward);
  emitMap(out, "home_files", spec.homeFiles);
  emitMap(out, "seed_files", spec.seedFiles);
  out << YAML::Key << "settings" << YAML::Value << YAML::BeginSeq;
  for (const auto& entry : spec.settings) {
    if (entry.keys.empty()) {
      out << YAML::DoubleQuoted << entry.path;
      continue;
    }
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "path" << YAML::Value << YAML::DoubleQuoted << entry.path;
    emitList(out, "keys", entry.keys);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  emitList(out, "state", spec.state);
  emitList(out, "state_exclude", spec.stateExclude);
  out << YAML::Key << "state_max_mib" << YAML::Value << spec.stateMaxMib;
  out << YAML::Key << "cpus" << YAML::Value << spec.cpus;
  out << YAML::Key << "memory_mib" << YAML::Value << spec.memoryMib;
  out << YAML::Key << "scratch_mib" << YAML::Value << spec.scratchMib;
  out << YAML::Key << "egress" << YAML::Value << YAML::BeginMap;
  emitList(out, "model_hosts", spec.egress.modelHosts);
  emitList(out, "extra_hosts", spec.egress.extraHosts);
  out << YAML::EndMap;
  if (!spec.login.format.empty()) {
    const LoginSpec& l = spec.login;
    out << YAML::Key << "login" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "format" << YAML::Value << l.format;
    if (!l.file.empty()) out << YAML::Key << "file" << YAML::Value << l.file;
    if (!l.loginCommand.empty()) {
      emitList(out, "login_command", l.loginCommand);
      emitList(out, "login_hosts", l.loginHosts);
      emitMap(out, "login_home_files", l.loginHomeFiles);
      if (!l.loginNote.empty()) out << YAML::Key << "login_note" << YAML::Value << l.loginNote;
    }
    if (l.entersVm) {
      out << YAML::Key << "delivery" << YAML::Value << "vm";
      emitList(out, "hosts", l.hosts);
      if (!l.tokenEnv.empty()) out << YAML::Key << "token_env" << YAML::Value << l.tokenEnv;
    } else {
      for (auto [key, value] : {std::pair{"token_env", &l.tokenEnv}, std::pair{"base_url_env", &l.baseUrlEnv},
                                std::pair{"tls_base_url_env", &l.tlsBaseUrlEnv}, std::pair{"tls_ca_env", &l.tlsCaEnv},
                                std::pair{"upstream", &l.upstream}})
        if (!value->empty()) out << YAML::Key << key << YAML::Value << *value;
      emitList(out, "paths", l.paths);
      out << YAML::Key << "refresh_url" << YAML::Value << l.refreshUrl;
      out << YAML::Key << "client_id" << YAML::Value << l.clientId;
      if (!l.clientSecret.empty()) out << YAML::Key << "client_secret" << YAML::Value << l.clientSecret;
      if (!l.accountFile.empty()) {
        out << YAML::Key << "account_file" << YAML::Value << l.accountFile;
        if (!l.accountKey.empty()) out << YAML::Key << "account_key" << YAML::Value << l.accountKey;
      }
      if (!l.accountHosts.empty()) emitList(out, "account_hosts", l.accountHosts);
    }
    emitList(out, "billing_env", l.billingEnv);
    emitMap(out, "env", l.env);
    emitMap(out, "home_files", l.homeFiles);
    out << YAML::EndMap;
  }
  if (!spec.mcp.file.empty()) {
    out << YAML::Key << "mcp" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "file" << YAML::Value << spec.mcp.file;
    out << YAML::Key << "format" << YAML::Value << std::string(mcpFormatName(spec.mcp.format));
    emitList(out, "args", spec.mcp.args);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace airlock::agents
