#include "image/oci/image_pull.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <mutex>
#include <thread>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "image/oci/layer_unpack.h"
#include "image/rootfs_image.h"

namespace airlock::image::oci {
namespace {

std::string shortDigest(const std::string& digest) { return digest.substr(7, 12); }


Result<> saveBlob(const ImageStore& store, const FetchedManifest& m) {
  const std::string path = store.blobPath(m.digest);
  if (pathExists(path)) return {};
  return ImageStore::writeAtomically(path, m.body);
}

// Downloads `blobs` that the store lacks, `jobs` at a time.
Result<uint64_t> downloadBlobs(const ImageStore& store, RegistryClient& client, const std::vector<Descriptor>& blobs,
                               const PullOptions& options) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < blobs.size(); ++i)
    if (!pathExists(store.blobPath(blobs[i].digest))) todo.push_back(i);
    else report(options.progress, fmt::format("blob {}: already in the store", shortDigest(blobs[i].digest)));
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex mu;
  std::optional<Error> firstError;
  auto worker = [&] {
    for (;;) {
      size_t k = next.fetch_add(1);
      if (k >= todo.size()) return;
      {
        std::lock_guard lock(mu);
        if (firstError) return;
      }
      const Descriptor& d = blobs[todo[k]];
      const std::string label = fmt::format("blob {}", shortDigest(d.digest));
      report(options.progress, fmt::format("{}: downloading {}", label, formatBytes(d.size)));
      int lastQuarter = 0;
      auto start = std::chrono::steady_clock::now();
      auto r = client.fetchBlob(d, store.blobPath(d.digest), [&](uint64_t done, uint64_t total) {
        int quarter = total ? static_cast<int>(done * 4 / total) : 4;
        if (quarter > lastQuarter && quarter < 4) {
          lastQuarter = quarter;
          report(options.progress, fmt::format("{}: {} / {}", label, formatBytes(done), formatBytes(total)));
        }
      });
      std::lock_guard lock(mu);
      if (!r) {
        if (!firstError) firstError = r.error();
        return;
      }
      bytes += *r;
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      report(options.progress, fmt::format("{}: done ({} in {:.1f} s, verified)", label, formatBytes(d.size), took.count()));
    }
  };
  std::vector<std::thread> threads;
  unsigned n = std::max(1u, std::min<unsigned>(options.jobs, static_cast<unsigned>(todo.size())));
  for (unsigned i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (firstError) return std::unexpected(*firstError);
  return bytes.load();
}

// Unpacks the layers into a staging tree, builds the erofs image and the
// record in a tmp- directory of the store, and renames it into place.
Result<> buildImage(const ImageStore& store, ImageRecord& record, const std::vector<Descriptor>& layers,
                    const PullOptions& options) {
  if (auto r = removeStaleBuilds(store.imagesDir()); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  auto tmp = TempDir::create(store.imagesDir(), "tmp-");
  if (!tmp) return failWith(exit_code::kImage, "{}", tmp.error().message);
  const std::string staging = tmp->path() + "/rootfs";
  if (::mkdir(staging.c_str(), 0755) != 0)
    return failWith(exit_code::kImage, "cannot create {}: {}", staging, errnoText(errno));
  Fd rootFd(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!rootFd) return failWith(exit_code::kImage, "cannot open {}: {}", staging, errnoText(errno));
  const auto& diffIds = record.config.diffIds;
  if (diffIds.size() != layers.size())
    return failWith(exit_code::kImage,
                    "the image config {} lists {} layer digests (rootfs.diff_ids) for a manifest of {} layers; the image "
                    "was refused",
                    record.configDigest, diffIds.size(), layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string name = fmt::format("layer {} of {} ({})", i + 1, layers.size(), layers[i].digest);
    report(options.progress, fmt::format("unpacking layer {}/{} ({})", i + 1, layers.size(), shortDigest(layers[i].digest)));
    auto stats = applyLayer(rootFd.get(), store.blobPath(layers[i].digest), name);
    if (!stats) return std::unexpected(stats.error());
    if (stats->diffId != diffIds[i])
      return failWith(exit_code::kImage,
                      "{} does not match the image config: its uncompressed digest is {} but rootfs.diff_ids[{}] is {}; "
                      "the image was refused",
                      name, stats->diffId, i, diffIds[i]);
  }
  auto user = resolveImageUser(rootFd.get(), record.config.user);
  if (!user) return std::unexpected(user.error());
  record.user = *user;
  if (auto r = checkRootfsDir(staging); !r)
    return failWith(exit_code::kImage, "the image cannot boot: {} (airlock needs /bin/sh in the image)", r.error().message);
  report(options.progress, "building the erofs root image");
  const std::string erofs = tmp->path() + "/rootfs.erofs";
  std::vector<std::string> argv = {"mkfs.erofs", "--quiet", "--preserve-mtime"};
  if (::geteuid() != 0) argv.push_back("--all-root");  // owners could not be kept while unpacking
  argv.push_back(erofs);
  argv.push_back(staging);
  if (auto r = runChecked(argv); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  if (auto r = removeTree(staging); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  if (auto r = ImageStore::writeRecord(tmp->path(), record); !r) return r;
  const std::string dest = store.imageDir(record.manifestDigest);
  if (::rename(tmp->path().c_str(), dest.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot move the built image to {}: {}", dest, errnoText(errno));
  (void)syncPath(store.imagesDir());
  return {};
}

}  // namespace

Result<> buildStoredImage(const ImageStore& store, ImageRecord& record, const ManifestDoc& doc, const std::string& what,
                          const PullOptions& options) {
  auto configText = readFile(store.blobPath(doc.config.digest), 16 << 20);
  if (!configText) return failWith(exit_code::kImage, "{}", configText.error().message);
  auto config = parseImageConfig(*configText);
  if (!config) return failWith(exit_code::kImage, "{}: {}", what, config.error().message);
  if ((!config->os.empty() && config->os != options.platform.os) ||
      (!config->architecture.empty() && config->architecture != options.platform.architecture))
    return failWith(exit_code::kImage, "{} is a {}/{} image; airlock boots {} (choose another tag or --platform)", what,
                    config->os, config->architecture, options.platform.str());
  record.config = std::move(*config);
  auto lock = store.lock(options.progress);
  if (!lock) return std::unexpected(lock.error());
  if (pathExists(store.erofsPath(record.manifestDigest))) return {};  // built by another pull while we waited
  if (auto r = buildImage(store, record, doc.layers, options); !r) {
    store.dropUnusedBlobs(record.blobs);  // a refused image leaves nothing in the store
    return std::unexpected(r.error());
  }
  return {};
}

Result<PullPolicy> parsePullPolicy(std::string_view text) {
  if (text == "missing") return PullPolicy::Missing;
  if (text == "always") return PullPolicy::Always;
  if (text == "never") return PullPolicy::Never;
  return failWith(exit_code::kUsage, "--pull must be missing, always or never (got '{}')", text);
}

Result<PulledImage> pullImage(const ImageStore& store, const ImageRef& ref, const PullOptions& options) {
  if (options.policy != PullPolicy::Always) {
    if (auto found = store.findRef(ref)) {
      auto record = store.readRecord(found->manifestDigest);
      if (!record) return std::unexpected(record.error());
      return PulledImage{*found, std::move(*record), store.erofsPath(found->manifestDigest)};
    }
    if (options.policy == PullPolicy::Never)
      return failWith(exit_code::kImage, "{} is not in the image store and --pull=never forbids pulling it", ref.str());
  }
  if (auto r = store.ensureLayout(); !r) return std::unexpected(r.error());
  RegistryClient client(ref, options.registry);
  report(options.progress, fmt::format("resolving {}", ref.str()));
  auto top = client.fetchManifest(ref.reference());
  if (!top) return std::unexpected(top.error());
  auto doc = parseManifest(top->body, top->contentType);
  if (!doc) return failWith(exit_code::kImage, "{}: {}", ref.str(), doc.error().message);
  std::vector<std::string> blobs = {top->digest};
  if (auto r = saveBlob(store, *top); !r) return std::unexpected(r.error());
  FetchedManifest manifest = *top;
  if (doc->isIndex) {
    auto pick = selectPlatform(*doc, options.platform);
    if (!pick) return failWith(exit_code::kImage, "{}: {}", ref.str(), pick.error().message);
    auto m = client.fetchManifest(pick->digest);
    if (!m) return std::unexpected(m.error());
    doc = parseManifest(m->body, m->contentType);
    if (!doc) return failWith(exit_code::kImage, "{}: {}", ref.str(), doc.error().message);
    if (doc->isIndex) return failWith(exit_code::kImage, "{}: the index for {} points to another index", ref.str(),
                                      options.platform.str());
    if (auto r = saveBlob(store, *m); !r) return std::unexpected(r.error());
    blobs.push_back(m->digest);
    manifest = std::move(*m);
  }
  for (const auto& l : doc->layers)
    if (auto c = layerCompression(l.mediaType); !c) return failWith(exit_code::kImage, "{}: {}", ref.str(), c.error().message);
  if (options.verify) {
    std::vector<std::string> signable = {top->digest};
    if (manifest.digest != top->digest) signable.push_back(manifest.digest);
    if (auto r = options.verify(client, signable); !r) return std::unexpected(r.error());
  }
  ImageRecord record;
  record.manifestDigest = manifest.digest;
  record.configDigest = doc->config.digest;
  record.platform = options.platform.str();
  blobs.push_back(doc->config.digest);
  for (const auto& l : doc->layers) {
    blobs.push_back(l.digest);
    record.layerBytes += l.size;
  }
  record.blobs = blobs;
  PulledImage out;
  out.fetched = true;
  out.ref = {ref.name(), manifest.digest, static_cast<int64_t>(std::time(nullptr))};
  out.erofsPath = store.erofsPath(manifest.digest);
  if (!pathExists(out.erofsPath)) {
    std::vector<Descriptor> toFetch = {doc->config};
    toFetch.insert(toFetch.end(), doc->layers.begin(), doc->layers.end());
    auto bytes = downloadBlobs(store, client, toFetch, options);
    if (!bytes) return std::unexpected(bytes.error());
    out.bytesDownloaded = *bytes;
    if (auto r = buildStoredImage(store, record, *doc, ref.str(), options); !r) return std::unexpected(r.error());
  }
  auto stored = store.readRecord(manifest.digest);
  if (!stored) return std::unexpected(stored.error());
  out.record = std::move(*stored);
  if (auto r = store.writeRef(out.ref); !r) return std::unexpected(r.error());
  return out;
}

}  // namespace airlock::image::oci
