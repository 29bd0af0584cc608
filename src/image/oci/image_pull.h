#pragma once
// Pulling an image into the store: resolve the reference to a platform
// manifest, download the config and the missing layers (a few at a time,
// each verified by digest), unpack the layers in order into a staging tree,
// build the erofs root image with mkfs.erofs, and record it under the
// manifest digest. Concurrent pulls of the same image share the downloads
// (per-blob locks) and build the image once (the store's lock).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "image/oci/image_ref.h"
#include "image/oci/image_store.h"
#include "image/oci/manifest.h"
#include "image/oci/registry_client.h"
#include "common/file_lock.h"

namespace airlock::image::oci {

/// When to contact the registry.
enum class PullPolicy {
  Missing,  ///< only when the store does not have the reference
  Always,   ///< always resolve the reference again (downloads only new blobs)
  Never,    ///< never; fail when the store does not have it
};

/// Parses "missing", "always" or "never" (kUsage otherwise).
Result<PullPolicy> parsePullPolicy(std::string_view text);

/// How to pull.
struct PullOptions {
  Platform platform;                       ///< default linux/amd64
  RegistryOptions registry;
  PullPolicy policy = PullPolicy::Missing;
  unsigned jobs = 3;                       ///< concurrent blob downloads
  ProgressFn progress;                 ///< one line per phase and layer
  /// Called when the registry was contacted and the reference resolved,
  /// before any blob is downloaded: the client and the digests a signature
  /// may name (the index digest when there is one, then the platform
  /// manifest's). An error aborts the pull (signature_fetch.h).
  std::function<Result<>(RegistryClient&, const std::vector<std::string>& digests)> verify;
};

/// A pulled (or found) image, ready to boot.
struct PulledImage {
  StoredRef ref;
  ImageRecord record;
  std::string erofsPath;
  bool fetched = false;          ///< the registry was contacted
  uint64_t bytesDownloaded = 0;  ///< network bytes for blobs (resumed downloads count only the rest)
};

/// Builds the image of manifest `doc` from blobs already in `store` (each
/// verified by digest): parses the config (`record.config`), checks it is for
/// `options.platform`, and under the store's lock unpacks the layers (each
/// checked against rootfs.diff_ids), builds the erofs image and writes
/// `record` (whose manifestDigest, configDigest, platform and blobs the caller
/// set) unless it is built already. A refused image leaves none of
/// `record.blobs` behind that no other image needs. `what` names the image in
/// errors (kImage). Used by pullImage and by loading an image archive.
Result<> buildStoredImage(const ImageStore& store, ImageRecord& record, const ManifestDoc& doc, const std::string& what,
                          const PullOptions& options);

/// Makes `ref` available in `store` according to `options.policy`. Errors
/// carry kImage and name the reference, the blob or the layer entry at fault.
Result<PulledImage> pullImage(const ImageStore& store, const ImageRef& ref, const PullOptions& options);

}  // namespace airlock::image::oci
