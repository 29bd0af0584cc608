// Fuzzes the parsers of signature material a registry (or an attacker in
// front of it) serves: the sigstore trusted root, Rekor bundles, cosign
// signature manifests, simple-signing payloads, RFC 3339 times and base64.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/encoding.h"
#include "image/oci/signature.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace airlock::image::oci;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)parseTrustedRoot(in);
  if (auto bundle = parseRekorBundle(in)) (void)rekorSetPayload(*bundle);
  if (auto layers = parseSignatureManifest(in))
    for (const auto& l : *layers)
      if (l.digest.size() != 71 || !l.digest.starts_with("sha256:")) __builtin_trap();
  (void)simpleSigningDigest(in);
  (void)parseRfc3339(in);
  if (auto bytes = airlock::base64Decode(in)) {
    auto again = airlock::base64Decode(airlock::base64Encode(*bytes));
    if (!again || *again != *bytes) __builtin_trap();
  }
  return 0;
}
