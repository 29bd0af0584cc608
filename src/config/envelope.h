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

namespace airlock::config {

/// The VM backend that would run.
struct BackendView {
  std::string accel;   ///< "kvm" or "tcg"
  std::string note;    ///< why TCG, or empty
  std::string kernel;  ///< kernel release of the cached boot assets, or what would be built
};

/// The image that would boot.
struct ImageView {
  std::string reference;  ///< "local:<agent>" or the configured image path
  std::string digest;     ///< "sha256:<recipe digest>" for local images, else empty
  bool cached = false;    ///< the image exists and needs no build
  std::string signature;  ///< signature status, in words
};

/// Everything `airlock info` prints.
struct Envelope {
  EffectiveConfig config;
  BackendView backend;
  ImageView image;
  EgressPlan egress;
  std::string directModeProblem;  ///< why `airlock run` would refuse direct mode; empty when it would not
};

/// The backend for `facts` (KVM is assumed to pass its boot probe) and the
/// kernel found in cacheDir()/assets.
BackendView describeBackend(const vm::HostFacts& facts);

/// The image of `config`: the configured `image`, else the agent's local
/// image (its recipe digest and whether the cache holds it).
ImageView describeImage(const EffectiveConfig& config);

/// Assembles the envelope (egress plan, direct-mode guards with `yes`).
Envelope buildEnvelope(EffectiveConfig config, BackendView backend, ImageView image, bool yes);

/// The envelope as JSON (`airlock info --json`; keys documented in README.md).
nlohmann::json envelopeJson(const Envelope& envelope);

/// The envelope as text lines for a terminal.
std::string envelopeText(const Envelope& envelope);

}  // namespace airlock::config
