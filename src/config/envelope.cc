#include "config/envelope.h"

#include <sys/stat.h>

#include <filesystem>

#include "common/paths.h"
#include "common/fd.h"
#include "image/recipe.h"
#include "workspace/ignore.h"

namespace airlock::config {
namespace {

using json = nlohmann::json;

std::string from(Layer layer) { return std::string(layerName(layer)); }

template <typename T>
json sourced(const Sourced<T>& s) {
  return {{"value", s.value}, {"from", from(s.layer)}};
}

/// The release of the newest kernel in cacheDir()/assets, or empty.
std::string cachedKernelRelease() {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string best;
  fs::file_time_type bestTime;
  for (const auto& entry : fs::directory_iterator(cacheDir() + "/assets", ec)) {
    if (!entry.path().filename().string().starts_with("kernel-")) continue;
    auto release = entry.path() / "release";
    auto when = fs::last_write_time(release, ec);
    if (ec || !fs::exists(entry.path() / "vmlinux")) continue;
    if (best.empty() || when > bestTime) {
      auto text = readFile(release.string(), 256);
      if (!text) continue;
      best = *text;
      while (!best.empty() && (best.back() == '\n' || best.back() == ' ')) best.pop_back();
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

}  // namespace

BackendView describeBackend(const vm::HostFacts& facts) {
  BackendView view;
  auto choice = vm::chooseAccel(vm::AccelRequest::kAuto, facts, [] { return true; });
  view.accel = choice.accel == vm::Accel::kKvm ? "kvm" : "tcg";
  view.note = choice.warning;
  std::string release = cachedKernelRelease();
  view.kernel = release.empty() ? "Debian linux-image-cloud-amd64 (not built yet: the first run downloads ~27 MB)"
                                : release;
  return view;
}

ImageView describeImage(const EffectiveConfig& config) {
  ImageView view;
  const auto& image = config.resolved.settings.image;
  if (image) {
    view.reference = image->value;
    struct stat st {};
    view.cached = stat(image->value.c_str(), &st) == 0;
    view.signature = "not verified (a local path you configured)";
    return view;
  }
  view.reference = "local:" + config.agent.name;
  view.digest = "sha256:" + image::recipeDigest(config.agent);
  struct stat st {};
  view.cached = stat(image::agentImagePath(config.agent).c_str(), &st) == 0;
  view.signature = "unsigned (built on this host from the agent's pinned recipe)";
  return view;
}

Envelope buildEnvelope(EffectiveConfig config, BackendView backend, ImageView image, bool yes) {
  Envelope e{std::move(config), std::move(backend), std::move(image), {}, {}};
  e.egress = egressPlan(e.config.agent, e.config.resolved.settings);
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
  j["image"] = {{"reference", e.image.reference},
                {"digest", e.image.digest},
                {"cached", e.image.cached},
                {"signature", e.image.signature},
                {"from", from(s.image ? s.image->layer : Layer::kBuiltin)}};
  bool direct = s.workspaceMode.value == WorkspaceMode::kDirect;
  j["workspace"] = {{"mode", workspaceModeName(s.workspaceMode.value)},
                    {"from", from(s.workspaceMode.layer)},
                    {"path", e.config.workspace},
                    {"shared", direct ? "live directory, read-write" : "snapshot, read-only lower layer"},
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
  for (const auto& h : e.egress.hosts)
    hosts.push_back({{"host", h.host}, {"ports", h.ports}, {"why", h.why}, {"from", from(h.layer)}});
  json removed = json::array();
  for (const auto& r : e.egress.removed) removed.push_back({{"host", r.value}, {"from", from(r.layer)}});
  j["egress"] = {{"profile", profileName(e.egress.profile.value)},
                 {"from", from(e.egress.profile.layer)},
                 {"enforced", false},
                 {"any_host", e.egress.anyHost},
                 {"hosts", hosts},
                 {"removed", removed}};
  json ports = json::array();
  for (const auto& p : s.hostPorts)
    ports.push_back({{"port", p.value}, {"guest", fmt::format("10.0.2.2:{}", p.value)}, {"from", from(p.layer)}});
  j["host_ports"] = ports;
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
  line("image", fmt::format("{}{}{}, {}", e.image.reference, e.image.digest.empty() ? "" : " " + e.image.digest,
                            e.image.cached ? "" : " (not built yet)", e.image.signature),
       layerName(s.image ? s.image->layer : Layer::kBuiltin));
  bool direct = s.workspaceMode.value == WorkspaceMode::kDirect;
  line("workspace", fmt::format("{} ({})", e.config.workspace,
                                direct ? "direct: live directory, read-write" : "snapshot, read-only"),
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
  line("egress", fmt::format("{} (not enforced yet: the VM uses QEMU user networking)",
                             profileName(e.egress.profile.value)), layerName(e.egress.profile.layer));
  if (e.egress.anyHost) line("", "any host, any TCP port", "");
  for (const auto& h : e.egress.hosts) {
    std::string ports;
    for (unsigned p : h.ports) ports += (ports.empty() ? "" : ",") + std::to_string(p);
    line("", fmt::format("{}:{}  ({})", h.host, ports, h.why), layerName(h.layer));
  }
  for (const auto& r : e.egress.removed) line("", "removed " + r.value, layerName(r.layer));
  if (s.hostPorts.empty()) line("host ports", "none", "");
  for (const auto& p : s.hostPorts)
    line("host ports", fmt::format("127.0.0.1:{0} -> 10.0.2.2:{0}", p.value), layerName(p.layer));
  if (s.envForward.empty()) line("env names", "none", "");
  for (const auto& v : s.envForward) line("env names", v.value, layerName(v.layer));
  for (const auto& i : e.config.resolved.ignored) out += "  " + describe(i) + "\n";
  return out;
}

}  // namespace airlock::config
