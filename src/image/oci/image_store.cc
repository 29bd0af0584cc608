#include "image/oci/image_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"

namespace airlock::image::oci {
namespace {

using nlohmann::json;

std::string hexOf(const std::string& digest) { return digest.substr(digest.find(':') + 1); }

/// The names in `dir`; none when it cannot be listed (missing is empty).
std::vector<std::string> namesIn(const std::string& dir) { return listDir(dir).value_or(std::vector<std::string>{}); }

uint64_t treeBytes(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return static_cast<uint64_t>(st.st_size);
  uint64_t total = 0;
  for (const auto& n : namesIn(path)) total += treeBytes(path + "/" + n);
  return total;
}

int64_t mtimeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_mtime) : 0;
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

std::string ImageStore::blobPath(const std::string& digest) const { return root_ + "/blobs/sha256/" + hexOf(digest); }

std::string ImageStore::imageDir(const std::string& manifestDigest) const {
  return root_ + "/images/" + hexOf(manifestDigest);
}

std::string ImageStore::refPath(const std::string& name) const {
  return root_ + "/refs/" + sha256Hex(name) + ".json";
}

Result<> ImageStore::ensureLayout() const {
  for (const char* sub : {"/blobs/sha256", "/images", "/refs"})
    if (auto r = makeDirs(root_ + sub, 0755); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  return {};
}

Result<FileLock> ImageStore::lock(const ProgressFn& progress) const {
  if (auto r = ensureLayout(); !r) return std::unexpected(r.error());
  return FileLock::acquire(root_ + "/lock", "using the image store", progress);
}

Result<> ImageStore::writeAtomically(const std::string& path, std::string_view data) {
  if (auto r = writeFileAtomic(path, data, 0644); !r) return std::unexpected(withCode(r.error(), exit_code::kImage));
  return {};
}

Result<> ImageStore::writeRecord(const std::string& dir, const ImageRecord& r) {
  json j = {{"manifest", r.manifestDigest},
            {"config", r.configDigest},
            {"platform", r.platform},
            {"blobs", r.blobs},
            {"layer_bytes", r.layerBytes},
            {"architecture", r.config.architecture},
            {"os", r.config.os},
            {"user", r.config.user},
            {"uid", r.user.uid},
            {"gid", r.user.gid},
            {"env", r.config.env},
            {"entrypoint", r.config.entrypoint},
            {"cmd", r.config.cmd},
            {"workdir", r.config.workingDir}};
  return writeAtomically(dir + "/image.json", j.dump(2) + "\n");
}

Result<ImageRecord> ImageStore::readRecord(const std::string& manifestDigest) const {
  const std::string path = imageDir(manifestDigest) + "/image.json";
  auto text = readFile(path, 16 << 20);
  if (!text) return failWith(exit_code::kImage, "image {} is not in the store (no {})", manifestDigest, path);
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return failWith(exit_code::kImage, "{} is damaged; remove the image and pull it again", path);
  try {
    ImageRecord r;
    r.manifestDigest = j.value("manifest", "");
    r.configDigest = j.value("config", "");
    r.platform = j.value("platform", "");
    r.blobs = strings(j, "blobs");
    r.layerBytes = j.value("layer_bytes", uint64_t{0});
    r.config.architecture = j.value("architecture", "");
    r.config.os = j.value("os", "");
    r.config.user = j.value("user", "");
    r.user = {j.value("uid", 0u), j.value("gid", 0u)};
    r.config.env = strings(j, "env");
    r.config.entrypoint = strings(j, "entrypoint");
    r.config.cmd = strings(j, "cmd");
    r.config.workingDir = j.value("workdir", "");
    return r;
  } catch (const json::exception& e) {
    return failWith(exit_code::kImage, "{} is damaged ({}); remove the image and pull it again", path, e.what());
  }
}

std::vector<StoredRef> ImageStore::readRefs() const {
  std::vector<StoredRef> refs;
  for (const auto& n : namesIn(root_ + "/refs")) {
    if (!n.ends_with(".json")) continue;  // temporary files of writeAtomically
    auto text = readFile(root_ + "/refs/" + n, 1 << 16);
    if (!text) continue;
    json j = json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    StoredRef r{j.value("name", ""), j.value("manifest", ""), j.value("pulled", int64_t{0})};
    if (!r.name.empty() && isValidDigest(r.manifestDigest)) refs.push_back(std::move(r));
  }
  return refs;
}

std::optional<StoredRef> ImageStore::findRef(const ImageRef& ref) const {
  for (auto& r : readRefs())
    if (r.name == ref.name()) {
      if (!ref.digest.empty() && r.manifestDigest != ref.digest) continue;
      if (pathExists(erofsPath(r.manifestDigest))) return r;
    }
  if (!ref.digest.empty()) {
    for (auto& r : readRefs())  // pinned by the digest of a platform manifest, or of the index it came from
      if (r.name.starts_with(ref.registry + "/" + ref.repository) && r.manifestDigest == ref.digest) return r;
    if (pathExists(erofsPath(ref.digest))) return StoredRef{ref.name(), ref.digest, mtimeOf(imageDir(ref.digest))};
  }
  return std::nullopt;
}

Result<std::optional<std::vector<StoredRef>>> ImageStore::refsByDigest(const std::string& text) const {
  std::string hex = text.starts_with("sha256:") ? text.substr(7) : text;
  bool isHex = !hex.empty() && hex.size() <= 64 &&
               std::all_of(hex.begin(), hex.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (!isHex || (!text.starts_with("sha256:") && hex.size() < 12)) return std::nullopt;
  const std::string prefix = "sha256:" + hex;
  std::set<std::string> digests;
  std::vector<StoredRef> refs;
  for (auto& r : readRefs())
    if (r.manifestDigest.starts_with(prefix)) {
      digests.insert(r.manifestDigest);
      refs.push_back(r);
    }
  if (digests.empty()) return failWith(exit_code::kImage, "no image in the store has digest {} (see `airlock image ls`)", text);
  if (digests.size() > 1) {
    std::string names;
    for (const auto& d : digests) names += (names.empty() ? "" : ", ") + d;
    return failWith(exit_code::kUsage, "digest prefix {} matches {} images: {}; give more digits", text,
                    digests.size(), names);
  }
  return std::optional(std::move(refs));
}

Result<> ImageStore::writeRef(const StoredRef& ref) const {
  if (auto r = ensureLayout(); !r) return r;
  json j = {{"name", ref.name}, {"manifest", ref.manifestDigest}, {"pulled", ref.pulledAt}};
  return writeAtomically(refPath(ref.name), j.dump() + "\n");
}

Result<std::vector<ImageSummary>> ImageStore::list() const {
  std::vector<ImageSummary> out;
  for (auto& ref : readRefs()) {
    auto record = readRecord(ref.manifestDigest);
    if (!record) continue;  // a ref whose image was pruned by hand
    ImageSummary s{ref, std::move(*record), treeBytes(erofsPath(ref.manifestDigest)),
                   mtimeOf(imageDir(ref.manifestDigest) + "/last-used")};
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ref.name < b.ref.name; });
  return out;
}

void ImageStore::markUsed(const std::string& manifestDigest) const {
  const std::string path = imageDir(manifestDigest) + "/last-used";
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd) ::futimens(fd.get(), nullptr);
}

Result<RemoveReport> ImageStore::remove(const ImageRef& ref) const {
  auto lk = lock({});
  if (!lk) return std::unexpected(lk.error());
  auto found = findRef(ref);
  if (!found) return failWith(exit_code::kImage, "{} is not in the image store (see `airlock image ls`)", ref.str());
  RemoveReport report;
  if (::unlink(refPath(found->name).c_str()) == 0) report.refs.push_back(found->name);
  if (auto r = collectGarbage(report); !r) return std::unexpected(r.error());
  return report;
}

Result<RemoveReport> ImageStore::removeRefs(const std::vector<StoredRef>& refs) const {
  auto lk = lock({});
  if (!lk) return std::unexpected(lk.error());
  RemoveReport report;
  for (const auto& r : refs)
    if (::unlink(refPath(r.name).c_str()) == 0) report.refs.push_back(r.name);
  if (auto r = collectGarbage(report); !r) return std::unexpected(r.error());
  return report;
}

Result<RemoveReport> ImageStore::prune(std::optional<unsigned> olderThanDays) const {
  auto lk = lock({});
  if (!lk) return std::unexpected(lk.error());
  RemoveReport report;
  if (olderThanDays) {
    const int64_t cutoff = static_cast<int64_t>(std::time(nullptr)) - int64_t{*olderThanDays} * 86400;
    for (const auto& r : readRefs()) {
      int64_t used = std::max(r.pulledAt, mtimeOf(imageDir(r.manifestDigest) + "/last-used"));
      if (used < cutoff && ::unlink(refPath(r.name).c_str()) == 0) report.refs.push_back(r.name);
    }
  }
  if (auto r = collectGarbage(report); !r) return std::unexpected(r.error());
  return report;
}

void ImageStore::dropUnusedBlobs(const std::vector<std::string>& digests) const {
  std::set<std::string> live;
  for (const auto& hex : namesIn(imagesDir()))
    if (auto rec = readRecord("sha256:" + hex))
      for (const auto& b : rec->blobs) live.insert(hexOf(b));
  for (const auto& d : digests)
    if (isValidDigest(d) && !live.count(hexOf(d))) ::unlink(blobPath(d).c_str());
}

Result<> ImageStore::collectGarbage(RemoveReport& report) const {
  std::set<std::string> liveImages;
  for (const auto& r : readRefs()) liveImages.insert(hexOf(r.manifestDigest));
  if (auto r = removeStaleBuilds(imagesDir()); !r) return r;
  std::set<std::string> liveBlobs;
  for (const auto& hex : namesIn(imagesDir())) {
    if (!liveImages.count(hex)) {
      report.bytesFreed += treeBytes(imagesDir() + "/" + hex);
      if (auto r = removeTree(imagesDir() + "/" + hex); !r) return r;
      report.images.push_back("sha256:" + hex);
      continue;
    }
    if (auto rec = readRecord("sha256:" + hex))
      for (const auto& b : rec->blobs) liveBlobs.insert(hexOf(b));
  }
  const std::string blobs = root_ + "/blobs/sha256";
  for (const auto& name : namesIn(blobs)) {
    // Partial downloads are kept a day for resuming; so are files being written.
    if (name.find(".tmp-") != std::string::npos && std::time(nullptr) - mtimeOf(blobs + "/" + name) < 3600) continue;
    std::string hex = name.substr(0, name.find('.'));
    if (liveBlobs.count(hex)) continue;
    if (name.ends_with(".partial") && std::time(nullptr) - mtimeOf(blobs + "/" + name) < 86400) continue;
    report.bytesFreed += treeBytes(blobs + "/" + name);
    ::unlink((blobs + "/" + name).c_str());
  }
  return {};
}

}  // namespace airlock::image::oci
