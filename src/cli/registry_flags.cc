#include "cli/registry_flags.h"

#include <cstdio>

#include "common/exit_codes.h"
#include "image/oci/image_store.h"

namespace airlock::cli {

void addRegistryFlags(CLI::App& cmd, RegistryFlags& flags) {
  cmd.add_option("--platform", flags.platform, "Platform to pick from a multi-arch image: os/arch[/variant]")
      ->capture_default_str();
  cmd.add_option("--pull", flags.pull, "When to contact the registry: missing, always or never")
      ->capture_default_str()
      ->check(CLI::IsMember({"missing", "always", "never"}));
  cmd.add_option("--ca-cert", flags.caCert, "Extra CA certificates (PEM) trusted for registry TLS")
      ->check(CLI::ExistingFile);
  cmd.add_option("--insecure-registry", flags.insecureRegistries,
                 "Registry host[:port] that may be reached over plain HTTP (loopback registries always may)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Result<image::oci::PullOptions> pullOptions(const RegistryFlags& flags, bool quiet) {
  image::oci::PullOptions o;
  auto platform = image::oci::parsePlatform(flags.platform);
  if (!platform) return failWith(exit_code::kUsage, "--platform: {}", platform.error().message);
  o.platform = *platform;
  auto policy = image::oci::parsePullPolicy(flags.pull);
  if (!policy) return std::unexpected(policy.error());
  o.policy = *policy;
  o.registry.caCert = flags.caCert;
  o.registry.insecureRegistries = flags.insecureRegistries;
  if (!quiet) o.progress = [](const std::string& line) { std::fprintf(stderr, "airlock: %s\n", line.c_str()); };
  return o;
}

Result<std::string> pulledImagePath(const std::string& reference, const RegistryFlags& flags, bool quiet) {
  auto ref = image::oci::parseImageRef(reference);
  if (!ref) return std::unexpected(ref.error());
  auto options = pullOptions(flags, quiet);
  if (!options) return std::unexpected(options.error());
  auto store = image::oci::ImageStore::openDefault();
  auto pulled = image::oci::pullImage(store, *ref, *options);
  if (!pulled) return std::unexpected(pulled.error());
  store.markUsed(pulled->record.manifestDigest);
  return pulled->erofsPath;
}

}  // namespace airlock::cli
