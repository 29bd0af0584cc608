// `airlock image pull|ls|rm|prune|inspect`: the OCI image store.

#include "cli/image_store_cmd.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/report.h"
#include "cli/registry_flags.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "image/oci/image_pull.h"
#include "image/oci/image_store.h"

namespace airlock::cli {
namespace {

using image::oci::ImageStore;


std::string when(int64_t t) {
  if (t == 0) return "never";
  int64_t ago = static_cast<int64_t>(std::time(nullptr)) - t;
  if (ago < 120) return "just now";
  if (ago < 7200) return fmt::format("{} minutes ago", ago / 60);
  if (ago < 172800) return fmt::format("{} hours ago", ago / 3600);
  return fmt::format("{} days ago", ago / 86400);
}

struct PullArgs {
  std::string ref;
  RegistryFlags registry;
  bool quiet = false;
};

int pull(const HostContext& host, const PullArgs& args) {
  auto ref = image::oci::parseImageRef(args.ref);
  if (!ref) return reportError(ref.error());
  auto settings = userSettings(host);
  if (!settings) return reportError(settings.error());
  const auto start = std::chrono::steady_clock::now();
  auto pulled = pullVerified(host, args.ref, args.registry, *settings, args.quiet);
  if (!pulled) return reportError(pulled.error());
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::printf("%s\n", pulled->ref.manifestDigest.c_str());
  if (!args.quiet)
    std::fprintf(stderr, "airlock: %s: %s (%s downloaded in %.1f s)\n", ref->str().c_str(),
                 pulled->fetched ? "pulled" : "already in the store", formatBytes(pulled->bytesDownloaded).c_str(), took.count());
  return 0;
}

int list(const ImageStore& store, bool asJson) {
  auto images = store.list();
  if (!images) return reportError(images.error());
  if (asJson) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& i : *images)
      out.push_back({{"name", i.ref.name},
                     {"digest", i.ref.manifestDigest},
                     {"size", i.erofsBytes},
                     {"layer_bytes", i.record.layerBytes},
                     {"pulled", i.ref.pulledAt},
                     {"last_used", i.lastUsed}});
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%-50s %-20s %-19s %10s  %s\n", "REPOSITORY", "TAG", "DIGEST", "SIZE", "LAST USED");
  for (const auto& i : *images) {
    auto colon = i.ref.name.rfind(':');
    auto at = i.ref.name.find('@');
    std::string repo = at != std::string::npos ? i.ref.name.substr(0, at)
                       : colon != std::string::npos && colon > i.ref.name.rfind('/') ? i.ref.name.substr(0, colon)
                                                                                     : i.ref.name;
    std::string tag = at != std::string::npos ? "<none>" : i.ref.name.substr(repo.size() + 1);
    std::printf("%-50s %-20s %-19s %10s  %s\n", repo.c_str(), tag.c_str(), i.ref.manifestDigest.substr(0, 19).c_str(),
                formatBytes(i.erofsBytes).c_str(), when(i.lastUsed).c_str());
  }
  std::fprintf(stderr, "airlock: %s in %s\n", imageListSummary(*images).c_str(), store.root().c_str());
  return 0;
}

int remove(const ImageStore& store, const std::string& text) {
  auto byDigest = store.refsByDigest(text);  // the digest `image ls` shows: every ref of that image
  if (!byDigest) return reportError(byDigest.error());
  Result<image::oci::RemoveReport> report = std::unexpected(Error{});
  if (*byDigest) {
    report = store.removeRefs(**byDigest);
  } else {
    auto ref = image::oci::parseImageRef(text);
    if (!ref) return reportError(ref.error());
    report = store.remove(*ref);
  }
  if (!report) return reportError(report.error());
  for (const auto& r : report->refs) std::printf("untagged %s\n", r.c_str());
  for (const auto& d : report->images) std::printf("deleted %s\n", d.c_str());
  std::fprintf(stderr, "airlock: freed %s\n", formatBytes(report->bytesFreed).c_str());
  return 0;
}

int prune(const ImageStore& store, int olderThanDays) {
  auto report = store.prune(olderThanDays >= 0 ? std::optional<unsigned>(olderThanDays) : std::nullopt);
  if (!report) return reportError(report.error());
  for (const auto& r : report->refs) std::printf("untagged %s\n", r.c_str());
  for (const auto& d : report->images) std::printf("deleted %s\n", d.c_str());
  std::fprintf(stderr, "airlock: freed %s\n", formatBytes(report->bytesFreed).c_str());
  return 0;
}

// Who signed the stored image, verified again offline from the store's copy
// of its signatures with the current config (and --verify-key).
nlohmann::json signatureStatus(const HostContext& host, const ImageStore& store, const image::oci::ImageRef& ref,
                               const image::oci::ImageRecord& record, const RegistryFlags& flags) {
  auto settings = userSettings(host);
  if (!settings) return {{"verified", false}, {"problem", settings.error().message}};
  auto setup = verifySetup(host, flags, *settings);
  if (!setup) return {{"verified", false}, {"problem", setup.error().message}};
  if (setup->mode == config::VerifyMode::kOff) return {{"verified", false}, {"problem", "verification is off"}};
  auto signer = verifyStoredImage(store, ref, record, *setup, {}, false);
  if (!signer) return {{"verified", false}, {"problem", signer.error().message}};
  nlohmann::json j = {{"verified", true}, {"signed_digest", signer->digest}, {"summary", signer->describe()}};
  if (signer->keyless) {
    j["issuer"] = signer->issuer;
    j["subject"] = signer->subject;
  } else {
    j["key"] = signer->keyFingerprint;
  }
  if (signer->signedAt) {
    j["signed_at"] = signer->signedAt;
    j["log_index"] = signer->logIndex;
  }
  return j;
}

int inspect(const HostContext& host, const std::string& text, const RegistryFlags& flags) {
  ImageStore store = ImageStore::inCache(host.dirs.cache);
  auto byDigest = store.refsByDigest(text);  // the digest `image ls` shows
  if (!byDigest) return reportError(byDigest.error());
  auto ref = image::oci::parseImageRef(*byDigest ? (*byDigest)->front().name : text);
  if (!ref) return reportError(ref.error());
  auto found = *byDigest ? std::optional((*byDigest)->front()) : store.findRef(*ref);
  if (!found) return reportError({ref->str() + " is not in the image store; pull it with `airlock image pull`",
                                  exit_code::kImage});
  auto rec = store.readRecord(found->manifestDigest);
  if (!rec) return reportError(rec.error());
  nlohmann::json j = {{"name", found->name},
                      {"digest", rec->manifestDigest},
                      {"config_digest", rec->configDigest},
                      {"platform", rec->platform},
                      {"rootfs", store.erofsPath(rec->manifestDigest)},
                      {"layer_bytes", rec->layerBytes},
                      {"blobs", rec->blobs},
                      {"user", rec->config.user},
                      {"uid", rec->user.uid},
                      {"gid", rec->user.gid},
                      {"env", rec->config.env},
                      {"entrypoint", rec->config.entrypoint},
                      {"cmd", rec->config.cmd},
                      {"workdir", rec->config.workingDir},
                      {"signature", signatureStatus(host, store, *ref, *rec, flags)}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace

std::string imageListSummary(const std::vector<image::oci::ImageSummary>& images) {
  std::set<std::string> digests;
  uint64_t total = 0;
  for (const auto& i : images)
    if (digests.insert(i.ref.manifestDigest).second) total += i.erofsBytes;
  auto count = [](size_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); };
  return fmt::format("{}, {}, {} of root images", count(digests.size(), "image"), count(images.size(), "reference"),
                     formatBytes(total));
}

void addImageStoreCommands(CLI::App& image, int& exitCode, const HostContext& host) {
  auto pullArgs = std::make_shared<PullArgs>();
  auto* pullCmd = image.add_subcommand("pull", "Pull an OCI or Docker image from a registry into the image store");
  pullCmd->footer(R"(Resolves the reference (short names are Docker Hub: ubuntu = docker.io/library/ubuntu:latest),
picks the --platform manifest of a multi-arch image, downloads the missing blobs (each checked
against its SHA-256 digest), unpacks the layers and builds a read-only erofs root image, cached
by manifest digest. Credentials come from the docker config (~/.docker/config.json). Prints the digest.
The cosign signature (tag sha256-<hex>.sig) is checked against image_verify_key or the keyless
identity in your config (--verify=off|warn|require, default warn; require refuses with exit 68).

Examples:
  airlock image pull ubuntu:24.04
  airlock image pull ghcr.io/org/agent@sha256:<digest>
  airlock image pull 127.0.0.1:5000/team/agent:dev --pull=always
  airlock image pull --verify=require --verify-key cosign.pub ghcr.io/org/agent:1.2)");
  pullCmd->add_option("IMAGE", pullArgs->ref, "Image reference")->required();
  pullArgs->registry.pull = "always";  // before addRegistryFlags, so --help shows it
  addRegistryFlags(*pullCmd, pullArgs->registry);
  pullCmd->add_flag("-q,--quiet", pullArgs->quiet, "Do not print progress lines");
  pullCmd->callback([pullArgs, &exitCode, &host] { exitCode = pull(host, *pullArgs); });

  auto asJson = std::make_shared<bool>(false);
  auto* ls = image.add_subcommand("ls", "List the images in the store (repository, tag, digest, size, last used)");
  ls->add_flag("--json", *asJson, "Print JSON");
  ls->callback([asJson, &exitCode, &host] { exitCode = list(ImageStore::inCache(host.dirs.cache), *asJson); });

  auto rmRef = std::make_shared<std::string>();
  auto* rm = image.add_subcommand("rm", "Remove an image reference, and its image and blobs when nothing else uses them");
  rm->add_option("IMAGE", *rmRef, "Image reference, or the digest `image ls` shows (sha256:PREFIX; every reference "
                                  "of that image is removed)")->required();
  rm->callback([rmRef, &exitCode, &host] { exitCode = remove(ImageStore::inCache(host.dirs.cache), *rmRef); });

  auto days = std::make_shared<int>(-1);
  auto* pr = image.add_subcommand("prune", "Remove unreferenced images and blobs (and with --older-than, unused images)");
  pr->add_option("--older-than", *days, "Also remove images not pulled or booted for this many days")
      ->check(CLI::NonNegativeNumber);
  pr->callback([days, &exitCode, &host] { exitCode = prune(ImageStore::inCache(host.dirs.cache), *days); });

  auto inspectRef = std::make_shared<std::string>();
  auto inspectFlags = std::make_shared<RegistryFlags>();
  auto* in = image.add_subcommand("inspect", "Show a stored image's digest, config (user, env, entrypoint, cmd), blobs "
                                             "and who signed it");
  in->add_option("IMAGE", *inspectRef, "Image reference, or the digest `image ls` shows (sha256:PREFIX)")->required();
  in->add_option("--verify-key", inspectFlags->verifyKey, "Check the signature with this cosign public key (PEM)")
      ->check(CLI::ExistingFile);
  in->callback([inspectRef, inspectFlags, &exitCode, &host] { exitCode = inspect(host, *inspectRef, *inspectFlags); });
}

}  // namespace airlock::cli
