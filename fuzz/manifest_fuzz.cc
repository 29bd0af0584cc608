// Fuzzes the parsing of untrusted registry input: manifests and indexes
// (then platform selection and layer media types), image configs,
// WWW-Authenticate challenges and image references.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "image/oci/image_ref.h"
#include "image/oci/manifest.h"
#include "image/oci/registry_auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace airlock::image::oci;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (std::string_view type : {std::string_view(), kOciIndex, kDockerList, kOciManifest, kDockerManifest}) {
    auto doc = parseManifest(in, type);
    if (!doc) continue;
    for (const auto& d : doc->manifests)
      if (!isValidDigest(d.digest)) __builtin_trap();
    for (const auto& l : doc->layers) {
      if (!isValidDigest(l.digest)) __builtin_trap();
      (void)layerCompression(l.mediaType);
    }
    if (doc->isIndex) (void)selectPlatform(*doc, Platform{});
  }
  (void)parseImageConfig(in);
  (void)parseChallenge(in);
  if (auto ref = parseImageRef(in)) {
    auto again = parseImageRef(ref->str());
    if (!again || again->str() != ref->str()) __builtin_trap();  // normalization is stable
  }
  (void)parsePlatform(in);
  return 0;
}
