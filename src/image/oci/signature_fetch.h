#pragma once
// Where an image's cosign signatures come from: the signature manifest at tag
// `sha256-<hex>.sig` in the image's repository (tried for the index digest,
// then the platform manifest digest) and its payload blobs, fetched with the
// pull's RegistryClient; and a copy in the image store
// (signatures/<manifest hex>.json) so `--pull=never`, `run-image` of a stored
// image and `image inspect` verify offline. The copy is only a cache of
// untrusted input: it is verified again every time.

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "image/oci/image_store.h"
#include "image/oci/registry_client.h"
#include "image/oci/signature.h"

namespace airlock::image::oci {

/// The signatures found for an image.
struct SignatureSet {
  std::string taggedDigest;            ///< the digest whose .sig tag held them
  std::vector<SignatureLayer> layers;  ///< payloads filled in (each checked against its digest)
};

/// Fetches the signature manifest of the first of `digests` that has one,
/// with its payloads (at most 1 MiB each). nullopt when none has a .sig tag.
Result<std::optional<SignatureSet>> fetchSignatures(RegistryClient& client, const std::vector<std::string>& digests);

/// The store's copy for the image `manifestDigest` (nullopt when none).
std::optional<SignatureSet> loadStoredSignatures(const ImageStore& store, const std::string& manifestDigest);
/// Replaces the store's copy (atomic); nullopt removes it.
Result<> storeSignatures(const ImageStore& store, const std::string& manifestDigest, const std::optional<SignatureSet>& set);

/// Verifies `set` against `policy` for the image `digests`; a missing set is
/// "no signature found" (kVerification).
Result<Signer> verifySignatureSet(const std::optional<SignatureSet>& set, const std::vector<std::string>& digests,
                                  const VerifyPolicy& policy);

/// The digests a signature may name for a stored image: its top-level
/// (index) digest when it has one, and its manifest digest.
std::vector<std::string> signableDigests(const ImageRecord& record);

}  // namespace airlock::image::oci
