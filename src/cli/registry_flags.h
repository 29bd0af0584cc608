#pragma once
// The flags every verb that may pull an image shares (--platform, --pull,
// --ca-cert, --insecure-registry), turning them into PullOptions, and
// resolving an image reference to a bootable erofs image with them.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/error.h"
#include "image/oci/image_pull.h"

namespace airlock::cli {

/// Raw values of the registry flags.
struct RegistryFlags {
  std::string platform = "linux/amd64";
  std::string pull = "missing";
  std::string caCert;
  std::vector<std::string> insecureRegistries;
};

/// Adds the flags to `cmd`, storing into `flags`.
void addRegistryFlags(CLI::App& cmd, RegistryFlags& flags);

/// Validates the flags into PullOptions (kUsage errors); `quiet` drops progress lines.
Result<image::oci::PullOptions> pullOptions(const RegistryFlags& flags, bool quiet);

/// Pulls `reference` per `flags` (when the store lacks it, or --pull=always),
/// records it as used now, and returns the path of its erofs root image.
Result<std::string> pulledImagePath(const std::string& reference, const RegistryFlags& flags, bool quiet);

}  // namespace airlock::cli
