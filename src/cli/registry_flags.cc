#include "cli/registry_flags.h"

#include <cstdio>

#include "cli/repeatable.h"

#include "common/exit_codes.h"
#include "common/fd.h"
#include "config/loader.h"
#include "config/merge.h"
#include "image/oci/image_store.h"
#include "image/oci/registry_auth.h"
#include "image/oci/signature_fetch.h"

namespace airlock::cli {

void addRegistryFlags(CLI::App& cmd, RegistryFlags& flags) {
  cmd.add_option("--platform", flags.platform, "Platform to pick from a multi-arch image: os/arch[/variant]")
      ->capture_default_str();
  cmd.add_option("--pull", flags.pull, "When to contact the registry: missing, always or never")
      ->capture_default_str()
      ->check(CLI::IsMember({"missing", "always", "never"}));
  cmd.add_option("--ca-cert", flags.caCert, "Extra CA certificates (PEM) trusted for registry TLS")
      ->check(CLI::ExistingFile);
  repeatable(cmd.add_option("--insecure-registry", flags.insecureRegistries,
                 "Registry host[:port] that may be reached over plain HTTP (loopback registries always may)"));
  cmd.add_option("--verify", flags.verify,
                 "Image signatures (cosign): off, warn (default: a warning when unverifiable) or require (refuse, "
                 "exit 68)")
      ->check(CLI::IsMember({"off", "warn", "require"}));
  cmd.add_option("--verify-key", flags.verifyKey, "Verify with this cosign public key (PEM) instead of image_verify_key")
      ->check(CLI::ExistingFile);
}

Result<config::Settings> userSettings(const HostContext& host) {
  config::ConfigSources sources;
  sources.userPath = config::userConfigPath(host.dirs.config);
  auto user = config::loadConfigFile(sources.userPath);
  if (!user) return std::unexpected(user.error());
  sources.user = std::move(*user);
  return config::resolve(agents::AgentSpec{}, sources).settings;
}

Result<VerifySetup> verifySetup(const HostContext& host, const RegistryFlags& flags, const config::Settings& settings) {
  VerifySetup v;
  v.mode = settings.imageVerify.value;
  v.modeFrom = fmt::format("image_verify: {} ({})", config::verifyModeName(v.mode), config::layerName(settings.imageVerify.layer));
  if (!flags.verify.empty()) {
    v.mode = *config::parseVerifyMode(flags.verify);
    v.modeFrom = "--verify=" + flags.verify;
  }
  if (v.mode == config::VerifyMode::kOff) return v;
  std::string keyPath = !flags.verifyKey.empty() ? flags.verifyKey : settings.imageVerifyKey ? settings.imageVerifyKey->value : "";
  if (!keyPath.empty()) {
    auto pem = readFile(keyPath, 64 << 10);
    if (!pem) return failWith(exit_code::kUsage, "cannot read the verification key {}: {}", keyPath, pem.error().message);
    if (auto fp = image::oci::publicKeyFingerprint(*pem); !fp)
      return failWith(exit_code::kUsage, "{}: {}", keyPath, fp.error().message);
    v.policy.publicKeyPem = *pem;
    v.policy.keySource = keyPath;
  }
  const bool anyKeyless = settings.imageVerifyTrustedRoot || settings.imageVerifyIssuer || settings.imageVerifySubject;
  if (anyKeyless) {
    if (!settings.imageVerifyTrustedRoot || !settings.imageVerifyIssuer || !settings.imageVerifySubject)
      return failWith(exit_code::kUsage,
                      "keyless verification needs image_verify_trusted_root, image_verify_issuer and "
                      "image_verify_subject together; set all three in {}",
                      config::userConfigPath(host.dirs.config));
    const std::string& rootPath = settings.imageVerifyTrustedRoot->value;
    auto text = readFile(rootPath, 4 << 20);
    if (!text) return failWith(exit_code::kUsage, "cannot read the trusted root {}: {}", rootPath, text.error().message);
    auto root = image::oci::parseTrustedRoot(*text);
    if (!root) return failWith(exit_code::kUsage, "{}: {}", rootPath, root.error().message);
    v.policy.trustedRoot = std::move(*root);
    v.policy.issuer = settings.imageVerifyIssuer->value;
    v.policy.subjectRegex = settings.imageVerifySubject->value;
  }
  v.configured = !v.policy.publicKeyPem.empty() || v.policy.trustedRoot;
  return v;
}

namespace {

const char* kNothingConfigured =
    "no verification key or keyless identity is configured (set image_verify_key, or image_verify_trusted_root + "
    "image_verify_issuer + image_verify_subject, in your user config, or pass --verify-key FILE)";

/// The mode applied to an unverified image: warn prints one line, require
/// refuses with what failed and the fix.
Result<> unverified(const std::string& ref, const VerifySetup& setup, const std::string& why) {
  if (setup.mode == config::VerifyMode::kRequire)
    return failWith(exit_code::kVerification,
                    "{}: signature verification failed ({}): {}; sign the image with cosign for the configured key or "
                    "identity, or pass --verify=warn to accept it unverified",
                    ref, setup.modeFrom, why);
  std::fprintf(stderr, "airlock: warning: %s: signature not verified: %s\n", ref.c_str(), why.c_str());
  return {};
}

}  // namespace

Result<image::oci::Signer> verifyStoredImage(const image::oci::ImageStore& store, const image::oci::ImageRef& ref,
                                             const image::oci::ImageRecord& record, const VerifySetup& setup,
                                             const image::oci::RegistryOptions& registry, bool mayFetch) {
  if (!setup.configured) return failWith(exit_code::kVerification, "{}", kNothingConfigured);
  auto digests = image::oci::signableDigests(record);
  auto set = image::oci::loadStoredSignatures(store, record.manifestDigest);
  if (!set && mayFetch) {
    image::oci::RegistryClient client(ref, registry);
    auto fetched = image::oci::fetchSignatures(client, digests);
    if (!fetched) return failWith(exit_code::kVerification, "cannot fetch its signatures: {}", fetched.error().message);
    (void)image::oci::storeSignatures(store, record.manifestDigest, *fetched);
    set = std::move(*fetched);
  }
  return image::oci::verifySignatureSet(set, digests, setup.policy);
}

Result<image::oci::PulledImage> pullVerified(const HostContext& host, const std::string& reference,
                                             const RegistryFlags& flags, const config::Settings& settings, bool quiet) {
  auto ref = image::oci::parseImageRef(reference);
  if (!ref) return std::unexpected(ref.error());
  auto options = pullOptions(host, flags, quiet);
  if (!options) return std::unexpected(options.error());
  auto setup = verifySetup(host, flags, settings);
  if (!setup) return std::unexpected(setup.error());
  auto store = image::oci::ImageStore::inCache(host.dirs.cache);
  std::optional<image::oci::Signer> signer;
  std::optional<std::string> problem;
  if (setup->mode != config::VerifyMode::kOff) {
    options->verify = [&](image::oci::RegistryClient& client, const std::vector<std::string>& digests) -> Result<> {
      if (!setup->configured) {
        problem = kNothingConfigured;
      } else {
        auto set = image::oci::fetchSignatures(client, digests);
        Result<image::oci::Signer> s = set ? image::oci::verifySignatureSet(*set, digests, setup->policy)
                                           : failWith(exit_code::kVerification, "cannot fetch its signatures: {}",
                                                      set.error().message);
        if (set) {
          if (auto r = store.ensureLayout(); !r) return r;
          (void)image::oci::storeSignatures(store, digests.back(), *set);
        }
        if (s) signer = *s;
        else problem = s.error().message;
      }
      if (problem && setup->mode == config::VerifyMode::kRequire) return unverified(ref->str(), *setup, *problem);
      return {};
    };
  }
  auto pulled = image::oci::pullImage(store, *ref, *options);
  if (!pulled) return std::unexpected(pulled.error());
  if (setup->mode != config::VerifyMode::kOff && !pulled->fetched) {
    // From the store: verify what the store holds, offline when it can.
    auto s = verifyStoredImage(store, *ref, pulled->record, *setup, options->registry,
                               options->policy != image::oci::PullPolicy::Never);
    if (s) signer = *s;
    else problem = s.error().message;
  }
  if (setup->mode != config::VerifyMode::kOff) {
    if (signer) {
      if (!quiet) std::fprintf(stderr, "airlock: %s: signature verified: %s\n", ref->str().c_str(), signer->describe().c_str());
    } else if (auto r = unverified(ref->str(), *setup, problem.value_or("unknown")); !r) {
      return std::unexpected(r.error());
    }
  }
  return pulled;
}

Result<image::oci::PullOptions> pullOptions(const HostContext& host, const RegistryFlags& flags, bool quiet) {
  image::oci::PullOptions o;
  auto platform = image::oci::parsePlatform(flags.platform);
  if (!platform) return failWith(exit_code::kUsage, "--platform: {}", platform.error().message);
  o.platform = *platform;
  auto policy = image::oci::parsePullPolicy(flags.pull);
  if (!policy) return std::unexpected(policy.error());
  o.policy = *policy;
  o.registry.caCert = flags.caCert;
  o.registry.insecureRegistries = flags.insecureRegistries;
  o.registry.dockerConfigDir = image::oci::dockerConfigDir(host.env, host.dirs.home);
  if (!quiet) o.progress = [](const std::string& line) { std::fprintf(stderr, "airlock: %s\n", line.c_str()); };
  return o;
}

Result<std::string> pulledImagePath(const HostContext& host, const std::string& reference, const RegistryFlags& flags,
                                    const config::Settings& settings, bool quiet) {
  auto pulled = pullVerified(host, reference, flags, settings, quiet);
  if (!pulled) return std::unexpected(pulled.error());
  image::oci::ImageStore::inCache(host.dirs.cache).markUsed(pulled->record.manifestDigest);
  return pulled->erofsPath;
}

}  // namespace airlock::cli
