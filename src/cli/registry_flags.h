#pragma once
// The flags every verb that may pull an image shares (--platform, --pull,
// --ca-cert, --insecure-registry), turning them into PullOptions, and
// resolving an image reference to a bootable erofs image with them.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "common/host_context.h"
#include "config/settings.h"
#include "image/oci/image_pull.h"
#include "image/oci/signature.h"

namespace airlock::cli {

/// Raw values of the registry flags.
struct RegistryFlags {
  std::string platform = "linux/amd64";
  std::string pull = "missing";
  std::string caCert;
  std::vector<std::string> insecureRegistries;
  std::string verify;     ///< --verify: off, warn or require ("" = the config's, default warn)
  std::string verifyKey;  ///< --verify-key: a cosign public key (PEM) instead of image_verify_key
};

/// How a pull checks signatures: the mode and what to verify against.
struct VerifySetup {
  config::VerifyMode mode = config::VerifyMode::kWarn;
  std::string modeFrom;               ///< "--verify", "image_verify (user)", "built-in"...
  bool configured = false;            ///< a key or a keyless identity is set
  image::oci::VerifyPolicy policy;
};

/// The verification settings of a pull: `settings` (the user config, and
/// for `run` the repo config's tightening) with --verify / --verify-key over
/// them. Reads the key and trusted root files (kUsage when unusable; the
/// error names the user config of `host`).
Result<VerifySetup> verifySetup(const HostContext& host, const RegistryFlags& flags, const config::Settings& settings);

/// Settings from the user config of `host` alone, for verbs without an agent
/// (image pull/inspect, run-image).
Result<config::Settings> userSettings(const HostContext& host);

/// Checks the signatures of an image in `store` offline (the store's copy of
/// its signature manifest; fetched with a new client when there is none and
/// `mayFetch`). An error says why it is not verified.
Result<image::oci::Signer> verifyStoredImage(const image::oci::ImageStore& store, const image::oci::ImageRef& ref,
                                             const image::oci::ImageRecord& record, const VerifySetup& setup,
                                             const image::oci::RegistryOptions& registry, bool mayFetch);

/// Pulls `reference` per `flags` and checks its signature per `settings` and
/// the --verify flags: warn prints one line when it cannot be verified,
/// require refuses (kVerification) before any layer is downloaded. The image
/// store is the one in host.dirs.cache.
Result<image::oci::PulledImage> pullVerified(const HostContext& host, const std::string& reference,
                                             const RegistryFlags& flags, const config::Settings& settings, bool quiet);

/// Adds the flags to `cmd`, storing into `flags`.
void addRegistryFlags(CLI::App& cmd, RegistryFlags& flags);

/// Validates the flags into PullOptions (kUsage errors), with the docker
/// config of `host` for credentials; `quiet` drops progress lines.
Result<image::oci::PullOptions> pullOptions(const HostContext& host, const RegistryFlags& flags, bool quiet);

/// Pulls `reference` per `flags` (when the store lacks it, or --pull=always),
/// verifies it (pullVerified), records it as used now, and returns the path
/// of its erofs root image.
Result<std::string> pulledImagePath(const HostContext& host, const std::string& reference, const RegistryFlags& flags,
                                    const config::Settings& settings, bool quiet);

}  // namespace airlock::cli
