#pragma once
// Offline verification of cosign image signatures (OpenSSL, no network):
//
//  * the signature manifest cosign pushes at tag `sha256-<hex>.sig` in the
//    image's repository: one layer per signature, each a simple-signing
//    payload (application/vnd.dev.cosign.simplesigning.v1+json) whose
//    critical.image.docker-manifest-digest names the signed manifest, with the
//    base64 signature in the layer annotation dev.cosignproject.cosign/signature;
//  * key-based: ECDSA P-256 / SHA-256 against a PEM public key;
//  * keyless: the Fulcio certificate (dev.sigstore.cosign/certificate, chain
//    in dev.sigstore.cosign/chain) must chain to a CA of the trusted root at
//    the time the transparency log recorded the entry, carry the expected OIDC
//    issuer (Fulcio extension 1.3.6.1.4.1.57264.1.8, or the older .1.1) and a
//    SAN subject that fully matches a regex; the Rekor bundle
//    (dev.sigstore.cosign/bundle) must carry a signed entry timestamp made by a
//    Rekor key of the trusted root, for a hashedrekord entry that records this
//    payload's hash, this signature and this certificate.
//
// Everything here is pure (bytes in, verdict out) so it is unit-tested with a
// CA and keys made in the test; fetching the signature manifest lives in
// signature_fetch.h.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::image::oci {

inline constexpr std::string_view kSimpleSigningType = "application/vnd.dev.cosign.simplesigning.v1+json";
inline constexpr std::string_view kSignatureAnnotation = "dev.cosignproject.cosign/signature";
inline constexpr std::string_view kCertificateAnnotation = "dev.sigstore.cosign/certificate";
inline constexpr std::string_view kChainAnnotation = "dev.sigstore.cosign/chain";
inline constexpr std::string_view kBundleAnnotation = "dev.sigstore.cosign/bundle";

/// The tag cosign stores the signatures of `digest` ("sha256:<hex>") under:
/// "sha256-<hex>.sig".
std::string signatureTag(std::string_view digest);

/// One layer of a signature manifest, with its payload once fetched.
struct SignatureLayer {
  std::string mediaType;
  std::string digest;
  uint64_t size = 0;
  std::map<std::string, std::string> annotations;
  std::string payload;  ///< the layer blob (the simple-signing JSON)
};

/// Parses a signature manifest (an OCI or Docker image manifest): its layers
/// with their annotations, payloads empty. Untrusted input: errors, no throws.
Result<std::vector<SignatureLayer>> parseSignatureManifest(std::string_view body);

/// The docker-manifest-digest of a simple-signing payload; refuses a payload
/// whose critical.type is not "cosign container image signature".
Result<std::string> simpleSigningDigest(std::string_view payload);


/// "sha256:<hex>" of a public key's DER SubjectPublicKeyInfo, from PEM text
/// (as `cosign public-key` prints it). kVerification when it is not a key
/// or not an ECDSA key.
Result<std::string> publicKeyFingerprint(std::string_view pem);

/// Verifies an ASN.1 DER ECDSA (or any EVP) signature over SHA-256(`data`)
/// with the public key `spkiDer` (DER SubjectPublicKeyInfo). Returns false
/// on a bad signature; errors only for unusable keys.
Result<bool> verifyWithSpki(std::string_view spkiDer, std::string_view data, std::string_view signature);

/// A Rekor transparency log of the trusted root.
struct TransparencyLog {
  std::string logId;     ///< hex SHA-256 of the DER public key (as in bundles' logID)
  std::string keyDer;    ///< DER SubjectPublicKeyInfo
  int64_t validFrom = 0;
  int64_t validUntil = 0;  ///< 0 = open
};

/// A certificate authority (Fulcio) of the trusted root: its chain, DER, leaf
/// first (intermediates, then the root).
struct CertificateAuthority {
  std::vector<std::string> chainDer;
  int64_t validFrom = 0;
  int64_t validUntil = 0;  ///< 0 = open
};

/// The trust material of keyless verification: Sigstore's trusted_root.json
/// (media type application/vnd.dev.sigstore.trustedroot+json;version=0.1):
/// `tlogs[]` {publicKey.rawBytes (base64 DER SPKI), logId.keyId (base64),
/// publicKey.validFor.start/end} and `certificateAuthorities[]`
/// {certChain.certificates[].rawBytes (base64 DER), validFor.start/end}.
/// `ctlogs` and `timestampAuthorities` are read past (SCTs and RFC 3161
/// timestamps are not checked).
struct TrustedRoot {
  std::vector<TransparencyLog> tlogs;
  std::vector<CertificateAuthority> authorities;
};

Result<TrustedRoot> parseTrustedRoot(std::string_view json);

/// RFC 3339 "2021-10-07T13:56:59Z" (fractions ignored) to Unix seconds.
std::optional<int64_t> parseRfc3339(std::string_view text);

/// What to verify against. At least one of `publicKeyPem` or (`trustedRoot`
/// + `issuer` + `subjectRegex`) must be set.
struct VerifyPolicy {
  std::string publicKeyPem;  ///< key-based: a PEM public key
  std::string keySource;     ///< where it came from, for messages
  std::optional<TrustedRoot> trustedRoot;
  std::string issuer;        ///< keyless: the OIDC issuer, exact
  std::string subjectRegex;  ///< keyless: ECMAScript regex matched against the whole SAN
};

/// Who signed, as established by verification.
struct Signer {
  bool keyless = false;
  std::string keyFingerprint;  ///< key-based: sha256 of the key
  std::string issuer;          ///< keyless
  std::string subject;         ///< keyless: the certificate's SAN (URI or email)
  int64_t signedAt = 0;        ///< the transparency log's integrated time (0 = not attested)
  int64_t logIndex = -1;
  std::string digest;          ///< the manifest digest the payload names
  std::string describe() const;  ///< "key sha256:..." / "issuer ..., subject ..." [+ ", logged at ..."]
};

/// The SET and entry of a cosign bundle annotation.
struct RekorBundle {
  std::string setBase64;   ///< SignedEntryTimestamp
  std::string bodyBase64;  ///< Payload.body (the canonical entry, base64)
  int64_t integratedTime = 0;
  int64_t logIndex = 0;
  std::string logId;       ///< hex
};

Result<RekorBundle> parseRekorBundle(std::string_view json);

/// The bytes Rekor signs for a SET: canonical JSON of body, integratedTime, logID, logIndex.
std::string rekorSetPayload(const RekorBundle& bundle);

/// Verifies the SET of `bundle` against the matching log of `root`, and that
/// its entry (hashedrekord) records `payload`'s SHA-256, `signature` and
/// `publicKeyPem` (the certificate or key PEM). kVerification with the reason.
Result<> verifyRekorBundle(const RekorBundle& bundle, const TrustedRoot& root, std::string_view payload,
                           std::string_view signature, std::string_view publicKeyPem);

/// Verifies the signature layers of the manifest(s) `digests` (the image's
/// index and/or platform manifest digest: a signature naming either counts)
/// against `policy`. The first layer that verifies wins; otherwise the error
/// (kVerification) names why each layer failed.
Result<Signer> verifySignatureLayers(const std::vector<SignatureLayer>& layers, const std::vector<std::string>& digests,
                                     const VerifyPolicy& policy);

}  // namespace airlock::image::oci
