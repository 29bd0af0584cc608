#include "image/oci/registry_auth.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "common/subprocess.h"

namespace airlock::image::oci {
namespace {

using nlohmann::json;

// The keys docker writes for a registry: its host, with or without scheme,
// and the legacy index URL for Docker Hub.
std::vector<std::string> configKeys(const std::string& registry) {
  if (registry == "docker.io")
    return {"https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io",
            "https://registry-1.docker.io"};
  return {registry, "https://" + registry, "http://" + registry, "https://" + registry + "/v2/"};
}

Result<Credentials> decodeAuth(const std::string& b64, const std::string& key) {
  auto decoded = base64Decode(b64);
  if (!decoded) return fail("the docker config's 'auth' entry for '{}' is not valid base64", key);
  const std::string& out = *decoded;
  auto colon = out.find(':');
  if (colon == std::string::npos) return fail("the docker config's 'auth' entry for '{}' is not user:password", key);
  return Credentials{out.substr(0, colon), out.substr(colon + 1)};
}

Result<Credentials> runHelper(const std::string& helper, const std::string& registry) {
  const std::string program = "docker-credential-" + helper;
  if (findProgram(program).empty())
    return fail("the docker config names credential helper '{}' but {} is not on PATH", helper, program);
  const std::string server = registry == "docker.io" ? "https://index.docker.io/v1/" : registry;
  // The helper protocol reads the server URL from stdin.
  auto out = runCommand({"sh", "-c", "printf '%s' \"$1\" | exec \"$2\" get", "sh", server, program});
  if (!out) return std::unexpected(out.error());
  if (out->exitCode != 0) {
    if (out->stdoutText.find("credentials not found") != std::string::npos) return Credentials{};
    return fail("credential helper {} failed for {} (exit {})", program, registry, out->exitCode);
  }
  json j = json::parse(out->stdoutText, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.value("Secret", json()).is_string())
    return fail("credential helper {} printed no JSON with a Secret for {}", program, registry);
  return Credentials{j.value("Username", std::string()), j.value("Secret", std::string())};
}

}  // namespace

std::string dockerConfigDir(const EnvMap& env, const std::string& home) {
  auto it = env.find("DOCKER_CONFIG");
  return it != env.end() && !it->second.empty() ? it->second : home + "/.docker";
}

Result<Credentials> lookupCredentials(const std::string& registry, const std::string& configDir) {
  if (configDir.empty()) return Credentials{};
  const std::string path = configDir + "/config.json";
  std::ifstream in(path);
  if (!in) return Credentials{};
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("docker config {} is not a JSON object", path);
  try {
    const auto keys = configKeys(registry);
    if (auto helpers = j.find("credHelpers"); helpers != j.end() && helpers->is_object())
      for (const auto& k : keys)
        if (auto h = helpers->find(k); h != helpers->end() && h->is_string()) return runHelper(h->get<std::string>(), registry);
    if (auto auths = j.find("auths"); auths != j.end() && auths->is_object()) {
      for (const auto& k : keys) {
        auto e = auths->find(k);
        if (e == auths->end() || !e->is_object()) continue;
        if (auto a = e->find("auth"); a != e->end() && a->is_string() && !a->get<std::string>().empty())
          return decodeAuth(a->get<std::string>(), k);
        if (auto t = e->find("identitytoken"); t != e->end() && t->is_string())
          return Credentials{"<token>", t->get<std::string>()};
      }
    }
    if (auto store = j.find("credsStore"); store != j.end() && store->is_string() && !store->get<std::string>().empty())
      return runHelper(store->get<std::string>(), registry);
  } catch (const json::exception& e) {
    return fail("docker config {} is malformed: {}", path, e.what());
  }
  return Credentials{};
}

Result<AuthChallenge> parseChallenge(std::string_view header) {
  AuthChallenge c;
  size_t i = 0;
  while (i < header.size() && std::isspace(static_cast<unsigned char>(header[i]))) ++i;
  size_t start = i;
  while (i < header.size() && !std::isspace(static_cast<unsigned char>(header[i]))) ++i;
  c.scheme = asciiLower(header.substr(start, i - start));
  if (c.scheme.empty()) return fail("the registry sent an empty WWW-Authenticate challenge");
  while (i < header.size()) {
    while (i < header.size() && (header[i] == ',' || std::isspace(static_cast<unsigned char>(header[i])))) ++i;
    size_t keyStart = i;
    while (i < header.size() && header[i] != '=' && header[i] != ',') ++i;
    if (i >= header.size() || header[i] != '=') break;
    std::string key = asciiLower(header.substr(keyStart, i - keyStart));
    ++i;
    std::string value;
    if (i < header.size() && header[i] == '"') {
      ++i;
      while (i < header.size() && header[i] != '"') {
        if (header[i] == '\\' && i + 1 < header.size()) ++i;
        value += header[i++];
      }
      ++i;
    } else {
      while (i < header.size() && header[i] != ',') value += header[i++];
    }
    c.params[key] = value;
  }
  return c;
}

}  // namespace airlock::image::oci
