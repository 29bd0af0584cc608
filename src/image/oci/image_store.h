#pragma once
// The content-addressed image store under <cache>/oci (<cache>: HostDirs::cache):
//
//   blobs/sha256/<hex>            manifests, configs and layers, verified by digest
//   images/<hex>/rootfs.erofs     one read-only root image per manifest digest
//   images/<hex>/image.json       the image record (config, user, blobs used)
//   images/<hex>/last-used        its mtime is when the image last booted
//   refs/<sha256 of name>.json    "registry/repo:tag" -> manifest digest
//   lock                          flock held while images or refs change
//
// Every file is written under a temporary name and renamed into place, so a
// reader (or a killed pull) never leaves or sees half an entry.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "image/oci/image_ref.h"
#include "image/oci/image_user.h"
#include "image/oci/manifest.h"
#include "common/file_lock.h"

namespace airlock::image::oci {

/// What the store knows about one built image.
struct ImageRecord {
  std::string manifestDigest;
  std::string configDigest;
  std::string platform;            ///< "linux/amd64"
  std::vector<std::string> blobs;  ///< every blob the image needs (manifests, config, layers)
  ImageConfig config;
  ImageUser user;                  ///< config.user resolved in the image
  uint64_t layerBytes = 0;         ///< compressed layers, as downloaded
};

/// A name in the store and the manifest it points to.
struct StoredRef {
  std::string name;            ///< "registry/repo:tag" or "registry/repo@sha256:..."
  std::string manifestDigest;
  int64_t pulledAt = 0;        ///< Unix seconds
};

/// One line of `airlock image ls`.
struct ImageSummary {
  StoredRef ref;
  ImageRecord record;
  uint64_t erofsBytes = 0;
  int64_t lastUsed = 0;  ///< Unix seconds; 0 = never booted
};

/// What `image rm` / `image prune` removed.
struct RemoveReport {
  std::vector<std::string> refs;
  std::vector<std::string> images;  ///< manifest digests
  uint64_t bytesFreed = 0;
};

/// The store rooted at one directory.
class ImageStore {
 public:
  /// A store at `root` (created on first write).
  explicit ImageStore(std::string root) : root_(std::move(root)) {}
  /// The store of airlock's cache directory `cacheDir` (HostDirs::cache): `cacheDir`/oci.
  static ImageStore inCache(const std::string& cacheDir) { return ImageStore(cacheDir + "/oci"); }

  const std::string& root() const { return root_; }
  std::string blobPath(const std::string& digest) const;
  std::string imageDir(const std::string& manifestDigest) const;
  std::string erofsPath(const std::string& manifestDigest) const { return imageDir(manifestDigest) + "/rootfs.erofs"; }
  std::string imagesDir() const { return root_ + "/images"; }

  /// Creates the store's directories.
  Result<> ensureLayout() const;
  /// Takes the store's lock (refs and images change only under it).
  Result<FileLock> lock(const ProgressFn& progress) const;

  /// The record of a built image, or an error when it is not in the store.
  Result<ImageRecord> readRecord(const std::string& manifestDigest) const;
  /// Writes `data` to `path` through a uniquely named temporary file in the
  /// same directory (fsync, rename), so concurrent writers never collide.
  static Result<> writeAtomically(const std::string& path, std::string_view data);
  /// Writes `record` as image.json into `dir` (a build directory).
  static Result<> writeRecord(const std::string& dir, const ImageRecord& record);

  /// The stored ref for `ref`: by name; a digest-pinned ref also matches a
  /// built image of that digest. nullopt when the store does not have it.
  std::optional<StoredRef> findRef(const ImageRef& ref) const;
  /// The refs naming the image whose manifest digest `text` gives, as
  /// `image ls` shows it ("sha256:" + a prefix, or 12 to 64 bare hex digits);
  /// nullopt when `text` is not digest-like (then it is a reference). kImage
  /// when no stored image has it; kUsage, naming the candidates, when a
  /// prefix matches several.
  Result<std::optional<std::vector<StoredRef>>> refsByDigest(const std::string& text) const;
  /// Adds or replaces a ref (atomic).
  Result<> writeRef(const StoredRef& ref) const;

  /// Every ref with its image, sorted by name.
  Result<std::vector<ImageSummary>> list() const;
  /// Records that the image was booted now.
  void markUsed(const std::string& manifestDigest) const;

  /// Removes the ref `ref` and, when no other ref uses it, its image and the
  /// blobs no remaining image needs. Fails (kImage) when `ref` is not stored.
  Result<RemoveReport> remove(const ImageRef& ref) const;
  /// Removes every ref in `refs` (from refsByDigest), then the images and
  /// blobs nothing else uses.
  Result<RemoveReport> removeRefs(const std::vector<StoredRef>& refs) const;
  /// Removes the blobs `digests` that no built image needs (a refused pull
  /// leaves nothing behind). Call with the store's lock held.
  void dropUnusedBlobs(const std::vector<std::string>& digests) const;
  /// Removes images without a ref, and with `olderThanDays` also those not
  /// used (booted or pulled) for that many days with their refs; then the blobs
  /// no remaining image needs and stale partial downloads.
  Result<RemoveReport> prune(std::optional<unsigned> olderThanDays) const;

 private:
  std::string refPath(const std::string& name) const;
  Result<> collectGarbage(RemoveReport& report) const;
  std::vector<StoredRef> readRefs() const;
  std::string root_;
};

}  // namespace airlock::image::oci
