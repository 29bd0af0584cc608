#pragma once
// `airlock image save` / `image load`: an image of the store as an OCI image
// layout in one tar file (oci-layout, index.json, blobs/sha256/<hex>), the
// form skopeo reads as `oci-archive:FILE` and writes with
// `skopeo copy ... oci-archive:FILE`.
//
// A loaded archive is untrusted: every entry passes the tar-safety rules
// (workspace::TarReader), only the layout's own names are accepted, every
// blob is hashed while it is copied into the store and refused unless it
// matches its name, and the images are then built exactly like pulled ones
// (layer diff_ids checked, erofs image, record, ref). A refused archive
// leaves no blob, image or ref behind.

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "image/oci/image_pull.h"
#include "image/oci/image_ref.h"
#include "image/oci/image_store.h"
#include "workspace/tar_safety.h"

namespace airlock::image::oci {

/// What save wrote.
struct SaveReport {
  std::string manifestDigest;
  uint64_t blobs = 0;
  uint64_t bytes = 0;  ///< size of the tar file
};

/// Writes the image `ref` of `store` (its platform manifest, config and
/// layers, each re-verified by digest) as an OCI layout tar to `path`
/// (through a temporary file, renamed into place), or to stdout when `path`
/// is "-" (then `bytes` counts the blobs only). index.json names the
/// image with org.opencontainers.image.ref.name = ref.name(). kUsage when `path`
/// cannot be created (no such directory, not writable), else kImage errors.
Result<SaveReport> saveImage(const ImageStore& store, const ImageRef& ref, const std::string& path);

/// How to load.
struct LoadOptions {
  std::string name;        ///< store the image under this name (archives of one image); "" = from index.json
  PullOptions build;       ///< platform (for multi-arch archives) and progress
  workspace::TarLimits limits;
};

/// Loads every image that the OCI layout tar at `path` names in its
/// index.json into `store`; returns the refs written. kUsage when an image has no name and
/// `options.name` is empty (the fix is --name); kImage errors name the
/// archive entry, blob or image at fault.
Result<std::vector<StoredRef>> loadImageArchive(const ImageStore& store, const std::string& path,
                                                const LoadOptions& options);

}  // namespace airlock::image::oci
