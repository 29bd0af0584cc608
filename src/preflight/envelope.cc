#include "preflight/envelope.h"

#include <sys/stat.h>

#include <filesystem>

#include "common/fd.h"
#include "image/recipe.h"
#include "vm/boot_assets.h"
#include "vm/guest_kernel.h"
#include "workspace/ignore.h"

namespace airlock::preflight {

using config::AllowedHost;
using config::EffectiveConfig;
using config::EgressProfile;
using config::Layer;
using config::layerName;
using config::Settings;
using config::Sourced;
using config::WorkspaceMode;

namespace {

using json = nlohmann::json;

std::string from(Layer layer) { return std::string(layerName(layer)); }

template <typename T>
json sourced(const Sourced<T>& s) {
  return {{"value", s.value}, {"from", from(s.layer)}};
}

/// The release of the newest kernel in the boot assets of `cacheDir`, or empty.
std::string cachedKernelRelease(const std::string& cacheDir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string best;
  fs::file_time_type bestTime;
  for (const auto& entry : fs::directory_iterator(vm::bootAssetsDir(cacheDir), ec)) {
    if (!entry.path().filename().string().starts_with("kernel-")) continue;
    auto release = entry.path() / "release";
    auto when = fs::last_write_time(release, ec);
    if (ec || !fs::exists(entry.path() / "vmlinux")) continue;
    if (best.empty() || when > bestTime) {
      auto text = vm::kernelRelease(entry.path().string());
      if (!text) continue;
      best = *text;
      bestTime = when;
    }
  }
  return best;
}

std::string reviewText(const Envelope& e, std::string& layer) {
  const Settings& s = e.config.resolved.settings;
  if (s.workspaceMode.value == WorkspaceMode::kDirect) {
    layer = from(s.workspaceMode.layer);
    return "none (direct mode: changes land in your files as the agent makes them)";
  }
  if (!s.review) {
    layer = from(Layer::kBuiltin);
    return "interactive";
  }
  layer = from(s.review->layer);
  return std::string(reviewPolicyName(s.review->value));
}

/// The layer of e.policy.hostPorts[i]: the --host-port flags come first, then
/// the configured host_ports in order.
Layer hostPortLayer(const Envelope& e, size_t i) {
  if (i < e.flagHostPorts) return Layer::kFlag;
  const auto& configured = e.config.resolved.settings.hostPorts;
  return i - e.flagHostPorts < configured.size() ? configured[i - e.flagHostPorts].layer : Layer::kFlag;
}

/// Why e.policy.hosts[i] is allowed, from the plan it was built from (one rule per planned host, in order).
const AllowedHost* plannedHost(const Envelope& e, size_t i) {
  return i < e.egress.hosts.size() ? &e.egress.hosts[i] : nullptr;
}

std::string imageSourceName(ImageSource source) {
  switch (source) {
    case ImageSource::kRecipe: return "recipe";
    case ImageSource::kRegistry: return "registry";
    case ImageSource::kLocalPath: return "local path";
  }
  return "?";
}

}  // namespace

BackendView describeBackend(const std::string& cacheDir, const vm::HostFacts& facts, vm::AccelRequest request) {
  BackendView view;
  auto choice = vm::chooseAccel(request, facts, [] { return true; });
  view.accel = choice.accel == vm::Accel::kKvm ? "kvm" : "tcg";
  view.note = choice.warning;
  if (auto own = vm::builtGuestKernel(cacheDir)) {
    view.kernel = "airlock's own " + vm::kernelRelease(*own).value_or("kernel");
    return view;
  }
  std::string release = cachedKernelRelease(cacheDir);
  view.kernel = release.empty()
                    ? "Debian linux-image-cloud-amd64 (not built yet: the first run downloads ~27 MB; "
                      "airlock system kernel build makes airlock's own, which boots faster)"
                    : release + " (Debian's; airlock system kernel build makes airlock's own, which boots faster)";
  return view;
}

ImageView describeImage(const std::string& cacheDir, const EffectiveConfig& config, const std::string& imageFlag) {
  ImageView view;
  const auto& image = config.resolved.settings.image;
  const std::string verify = fmt::format("checked when pulled (image_verify: {})",
                                         verifyModeName(config.resolved.settings.imageVerify.value));
  std::string reference = !imageFlag.empty()          ? imageFlag
                          : image                     ? image->value
                          : config.agent.image.reference;
  view.layer = !imageFlag.empty() ? Layer::kFlag : image ? image->layer : Layer::kBuiltin;
  bool path = imageFlag.empty() && image && (image->value.starts_with('/') || image->value.starts_with('.'));
  if (path) {
    view.source = ImageSource::kLocalPath;
    view.reference = image->value;
    struct stat st {};
    view.cached = stat(image->value.c_str(), &st) == 0;
    if (!view.cached)
      view.problem = fmt::format("image {} does not exist: airlock run would fail; set `image` to a rootfs "
                                 "directory, an erofs image file or an image reference", image->value);
    view.signature = "not verified (a local path you configured)";
    return view;
  }
  if (!reference.empty()) {
    view.source = ImageSource::kRegistry;
    view.reference = reference;
    view.signature = verify;
    return view;
  }
  view.reference = "local:" + config.agent.name;
  view.digest = "sha256:" + image::recipeDigest(config.agent);
  struct stat st {};
  view.cached = stat(image::agentImagePath(cacheDir, config.agent).c_str(), &st) == 0;
  view.signature = "unsigned (built on this host from the agent's pinned recipe)";
  return view;
}

Result<Envelope> buildEnvelope(EffectiveConfig config, BackendView backend, ImageView image, RunPorts ports,
                               bool yes) {
  Envelope e;
  e.config = std::move(config);
  e.backend = std::move(backend);
  e.image = std::move(image);
  e.published = std::move(ports.published);
  e.egress = egressPlan(e.config.agent, e.config.resolved.settings);
  e.flagHostPorts = ports.hostPorts.size();
  auto policy = runEgressPolicy(e.config.agent, e.config.resolved.settings, std::move(ports.hostPorts));
  if (!policy) return std::unexpected(policy.error());
  e.policy = std::move(*policy);
  if (auto r = checkDirectMode(e.config.resolved, e.config.sources, yes); !r) e.directModeProblem = r.error().message;
  return e;
}

json envelopeJson(const Envelope& e) {
  const Settings& s = e.config.resolved.settings;
  json j;
  j["agent"] = e.config.agent.name;
  j["backend"] = {{"vmm", "qemu microvm"}, {"accel", e.backend.accel}, {"accel_note", e.backend.note},
                  {"kernel", e.backend.kernel}};
  j["vcpus"] = sourced(s.cpus);
  j["memory_mib"] = sourced(s.memoryMib);
  j["image"] = {{"source", imageSourceName(e.image.source)},
                {"reference", e.image.reference},
                {"digest", e.image.digest},
                {"cached", e.image.cached},
                {"signature", e.image.signature},
                {"problem", e.image.problem},
                {"from", from(e.image.layer)}};
  bool direct = s.workspaceMode.value == WorkspaceMode::kDirect;
  j["workspace"] = {{"mode", workspaceModeName(s.workspaceMode.value)},
                    {"from", from(s.workspaceMode.layer)},
                    {"path", e.config.workspace},
                    {"shared", direct ? "live directory, read-write (virtiofsd acting as its owner)"
                                     : "snapshot, read-only lower layer (an erofs image on a read-only disk)"},
                    {"direct_mode_problem", e.directModeProblem}};
  json excludes = json::array();
  for (const auto& x : s.excludes) excludes.push_back({{"pattern", x.value}, {"from", from(x.layer)}});
  j["excludes"] = {{"patterns", excludes},
                   {"secret_patterns", direct ? json::array() : json(workspace::IgnoreRules::secretPatterns())},
                   {"applied", !direct}};
  std::string reviewLayer;
  std::string review = reviewText(e, reviewLayer);
  j["review"] = {{"policy", review}, {"from", reviewLayer}};
  json hosts = json::array();
  for (size_t i = 0; i < e.policy.hosts.size(); ++i) {
    const auto* planned = plannedHost(e, i);
    hosts.push_back({{"host", e.policy.hosts[i].pattern},
                     {"ports", e.policy.hosts[i].ports},
                     {"why", planned ? planned->why : ""},
                     {"from", from(planned ? planned->layer : Layer::kFlag)}});
  }
  json removed = json::array();
  for (const auto& r : e.egress.removed) removed.push_back({{"host", r.value}, {"from", from(r.layer)}});
  j["egress"] = {{"profile", profileName(e.policy.profile)},
                 {"from", from(e.egress.profile.layer)},
                 {"enforced", true},
                 {"any_host", e.policy.profile == EgressProfile::kPermissive},
                 {"hosts", hosts},
                 {"removed", removed}};
  json ports = json::array();
  for (size_t i = 0; i < e.policy.hostPorts.size(); ++i) {
    const auto& p = e.policy.hostPorts[i];
    ports.push_back({{"port", p.hostPort}, {"guest", fmt::format("10.0.2.2:{}", p.guestPort)},
                     {"from", from(hostPortLayer(e, i))}});
  }
  j["host_ports"] = ports;
  json published = json::array();
  for (const auto& p : e.published)
    published.push_back({{"port", p.hostPort}, {"host", fmt::format("127.0.0.1:{}", p.hostPort)},
                         {"guest_port", p.guestPort}, {"from", "flag"}});
  j["published"] = published;
  json env = json::array();
  for (const auto& v : s.envForward) env.push_back({{"name", v.value}, {"from", from(v.layer)}});
  j["env_forward"] = env;
  json ignored = json::array();
  for (const auto& i : e.config.resolved.ignored)
    ignored.push_back({{"file", i.file}, {"key", i.key}, {"reason", i.reason}});
  j["ignored"] = ignored;
  return j;
}

std::string envelopeText(const Envelope& e) {
  const Settings& s = e.config.resolved.settings;
  std::string out;
  auto line = [&](std::string_view label, const std::string& value, std::string_view layer) {
    out += fmt::format("  {:<14} {}{}\n", label, value, layer.empty() ? "" : fmt::format("   [{}]", layer));
  };
  out += fmt::format("airlock run {}: isolation envelope\n", e.config.agent.name);
  line("backend", fmt::format("QEMU microvm, {}{}", e.backend.accel == "kvm" ? "KVM" : "TCG emulation",
                              e.backend.note.empty() ? "" : " (" + e.backend.note + ")"), "");
  line("kernel", e.backend.kernel, "");
  line("vCPUs", std::to_string(s.cpus.value), layerName(s.cpus.layer));
  line("memory", fmt::format("{} MiB", s.memoryMib.value), layerName(s.memoryMib.layer));
  std::string imageState = e.image.source == ImageSource::kRegistry ? " (registry reference, pulled on first use)"
                           : e.image.source == ImageSource::kLocalPath ? " (local path)"
                           : e.image.cached ? "" : " (not built yet)";
  line("image", fmt::format("{}{}{}, {}", e.image.reference, e.image.digest.empty() ? "" : " " + e.image.digest,
                            imageState, e.image.signature),
       layerName(e.image.layer));
  if (!e.image.problem.empty()) line("", "error: " + e.image.problem, "");
  bool direct = s.workspaceMode.value == WorkspaceMode::kDirect;
  line("workspace", fmt::format("{} ({})", e.config.workspace,
                                direct ? "direct: live directory, read-write, served by virtiofsd as its owner"
                                       : "snapshot, read-only: an erofs image on a read-only disk"),
       layerName(s.workspaceMode.layer));
  if (!e.directModeProblem.empty()) line("", "airlock run would refuse: " + e.directModeProblem, "");
  if (direct) {
    line("excludes", "none apply in direct mode (secret files included)", "");
  } else {
    line("excludes", fmt::format("{} secret patterns (always; see README.md)",
                                 workspace::IgnoreRules::secretPatterns().size()), "built-in");
    for (const auto& x : s.excludes) line("", x.value, layerName(x.layer));
  }
  std::string reviewLayer;
  std::string review = reviewText(e, reviewLayer);
  line("review", review, reviewLayer);
  bool anyHost = e.policy.profile == EgressProfile::kPermissive;
  line("egress", fmt::format("{} (enforced by the session firewall: {})", profileName(e.policy.profile),
                             anyHost ? "any public host" : "only the hosts below, DNS through airlock"),
       layerName(e.egress.profile.layer));
  if (anyHost) line("", "any public host, any TCP port (never your host or private addresses)", "");
  for (size_t i = 0; i < e.policy.hosts.size(); ++i) {
    const auto* planned = plannedHost(e, i);
    std::string ports;
    for (unsigned p : e.policy.hosts[i].ports) ports += (ports.empty() ? "" : ",") + std::to_string(p);
    line("", fmt::format("{}:{}  ({})", e.policy.hosts[i].pattern, ports, planned ? planned->why : ""),
         layerName(planned ? planned->layer : Layer::kFlag));
  }
  for (const auto& r : e.egress.removed) line("", "removed " + r.value, layerName(r.layer));
  if (e.policy.hostPorts.empty()) line("host ports", "none", "");
  for (size_t i = 0; i < e.policy.hostPorts.size(); ++i)
    line("host ports", fmt::format("127.0.0.1:{} -> 10.0.2.2:{}", e.policy.hostPorts[i].hostPort,
                                   e.policy.hostPorts[i].guestPort), layerName(hostPortLayer(e, i)));
  for (const auto& p : e.published)
    line("published", fmt::format("guest :{} -> 127.0.0.1:{}", p.guestPort, p.hostPort), "flag");
  if (s.envForward.empty()) line("env names", "none", "");
  for (const auto& v : s.envForward) line("env names", v.value, layerName(v.layer));
  for (const auto& i : e.config.resolved.ignored) out += "  " + describe(i) + "\n";
  return out;
}

}  // namespace airlock::preflight
