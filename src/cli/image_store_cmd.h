#pragma once
// Pieces of `airlock image ls` that are tested apart from the store.

#include <string>
#include <vector>

#include "image/oci/image_store.h"

namespace airlock::cli {

/// The `image ls` footer's counts: "1 image, 2 references, 12.0 MiB of root
/// images": distinct images (by manifest digest, each size counted once) and
/// the references (tags or name@digest) naming them, singular or plural.
std::string imageListSummary(const std::vector<image::oci::ImageSummary>& images);

}  // namespace airlock::cli
