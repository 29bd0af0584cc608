#pragma once
// Registry credentials and auth challenges: the docker CLI's config file
// ($DOCKER_CONFIG/config.json, else ~/.docker/config.json) with its "auths"
// entries, "credHelpers" and "credsStore" (docker-credential-<name> get),
// and parsing of WWW-Authenticate challenges (Bearer realm/service/scope, Basic).

#include <map>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/host_context.h"

namespace airlock::image::oci {

/// A user name and password (or identity token) for one registry.
struct Credentials {
  std::string username;
  std::string password;
  bool empty() const { return username.empty() && password.empty(); }
};

/// Finds credentials for `registry` ("docker.io", "ghcr.io", "127.0.0.1:5000")
/// in the docker config file of `configDir` (`configDir`/config.json; see
/// dockerConfigDir). No `configDir`, no config file or no entry gives empty
/// credentials (anonymous); a malformed file or a failing credential helper
/// is an error naming it.
Result<Credentials> lookupCredentials(const std::string& registry, const std::string& configDir);

/// The docker CLI's config directory for the environment `env` and home
/// directory `home`: $DOCKER_CONFIG, else `home`/.docker.
std::string dockerConfigDir(const EnvMap& env, const std::string& home);

/// One WWW-Authenticate challenge.
struct AuthChallenge {
  std::string scheme;                         ///< lowercase: "bearer" or "basic"
  std::map<std::string, std::string> params;  ///< realm, service, scope, ...
};

/// Parses a WWW-Authenticate header value (the first challenge in it).
Result<AuthChallenge> parseChallenge(std::string_view header);

}  // namespace airlock::image::oci
