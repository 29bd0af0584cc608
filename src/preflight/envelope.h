#pragma once
// The isolation envelope of a run, as `airlock info` shows it: backend,
// size, image, workspace, excludes, review, egress, host ports and forwarded
// variable names (never values), each with the layer that set it, and the
// repo keys that were ignored. Built without booting anything.

#include <string>

#include <nlohmann/json.hpp>

#include "config/effective.h"
#include "config/egress_plan.h"
#include "vm/accel.h"

namespace airlock::preflight {

/// The VM backend that would run.
struct BackendView {
  std::string accel;   ///< "kvm" or "tcg"
  std::string note;    ///< why TCG, or empty
  std::string kernel;  ///< kernel release of the cached boot assets, or what would be built
};

/// What kind of image would boot.
enum class ImageSource {
  kRecipe,     ///< built on this host from the agent's pinned recipe ("local:<agent>")
  kRegistry,   ///< an OCI reference pulled from a registry (--image, `image:`, or the agent's `image:`)
  kLocalPath,  ///< a rootfs directory or erofs file named by `image:` ('/' or '.' first)
};

/// The image that would boot.
struct ImageView {
  ImageSource source = ImageSource::kRecipe;
  std::string reference;  ///< "local:<agent>", the registry reference or the configured path
  std::string digest;     ///< "sha256:<recipe digest>" for recipe images, else empty
  bool cached = false;    ///< recipe image: built already; local path: exists
  std::string signature;  ///< signature status, in words
  std::string problem;    ///< why `airlock run` would fail with this image (a missing path), else empty
  /// Who chose it: flag (--image), the config layer of `image`, or built-in.
  config::Layer layer = config::Layer::kBuiltin;
};

/// Everything `airlock info` prints.
struct Envelope {
  config::EffectiveConfig config;
  BackendView backend;
  ImageView image;
  config::EgressPlan egress;
  egress::Policy policy;                    ///< what the firewall enforces (config::runEgressPolicy)
  size_t flagHostPorts = 0;                 ///< how many of policy.hostPorts came from --host-port (the first)
  std::vector<egress::HostPort> published;  ///< --publish: guest servers reachable on the host's 127.0.0.1
  std::string directModeProblem;  ///< why `airlock run` would refuse direct mode; empty when it would not
};

/// The backend `request` gets on a host with `facts` (under kAuto, KVM is
/// assumed to pass its boot probe) and the kernel found in the boot assets of
/// `cacheDir` (HostDirs::cache).
BackendView describeBackend(const std::string& cacheDir, const vm::HostFacts& facts,
                            vm::AccelRequest request = vm::AccelRequest::kAuto);

/// The image `airlock run` would boot, in its order: `imageFlag` (--image, a
/// registry reference), else the configured `image` (a path when it starts
/// with '/' or '.', else a registry reference), else the agent's `image:`
/// reference, else the agent's recipe image (its digest and whether the
/// cache `cacheDir` holds it).
ImageView describeImage(const std::string& cacheDir, const config::EffectiveConfig& config,
                        const std::string& imageFlag = "");

/// What the command line adds to the envelope beyond its config layer.
struct RunPorts {
  std::vector<egress::HostPort> hostPorts;  ///< --host-port
  std::vector<egress::HostPort> published;  ///< --publish
};

/// Assembles the envelope: the egress plan and the policy `airlock run` would
/// enforce (runEgressPolicy with `ports.hostPorts`), the direct-mode guards
/// with `yes`. Fails (kUsage) as `airlock run` would on an invalid host entry.
Result<Envelope> buildEnvelope(config::EffectiveConfig config, BackendView backend, ImageView image, RunPorts ports,
                               bool yes);

/// The envelope as JSON (`airlock info --json`; keys documented in README.md).
nlohmann::json envelopeJson(const Envelope& envelope);

/// The envelope as text lines for a terminal.
std::string envelopeText(const Envelope& envelope);

}  // namespace airlock::preflight
