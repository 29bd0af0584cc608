#pragma once
// Signature material made in the test with OpenSSL, shaped like cosign's:
// P-256 keys, a Fulcio-like CA and code-signing leaf certificates with the
// OIDC issuer extensions and a SAN, simple-signing payloads, Rekor entries
// (hashedrekord) with a signed entry timestamp, trusted_root.json and
// signature manifests with cosign's annotations.

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace airlock::test {

/// An ECDSA P-256 key pair.
class EcKey {
 public:
  EcKey();
  EVP_PKEY* get() const { return key_.get(); }
  std::string publicPem() const;
  std::string spkiDer() const;
  /// DER ECDSA signature over SHA-256(data).
  std::string sign(std::string_view data) const;

 private:
  std::shared_ptr<EVP_PKEY> key_;
};

/// A certificate and its key.
struct TestCert {
  EcKey key;
  std::shared_ptr<X509> cert;
  std::string pem() const;
  std::string der() const;
};

/// A self-signed CA (or one signed by `parent`), valid [notBefore, notAfter].
TestCert makeCa(const std::string& commonName, int64_t notBefore, int64_t notAfter, const TestCert* parent = nullptr);

/// What a Fulcio leaf carries.
struct LeafOptions {
  std::string issuer = "https://token.actions.githubusercontent.com";
  bool issuerV2 = true;  ///< extension .1.8 (DER UTF8String); false: the older .1.1 (raw)
  std::string sanUri = "https://github.com/org/repo/.github/workflows/release.yml@refs/tags/v1";
  std::string sanEmail;
  bool codeSigning = true;
  int64_t notBefore = 0;
  int64_t notAfter = 0;
};

/// A leaf certificate for `key` issued by `ca`.
TestCert makeLeaf(const TestCert& ca, const LeafOptions& options);

/// cosign's simple-signing payload for `digest`.
std::string simpleSigningPayload(const std::string& digest, const std::string& repo = "127.0.0.1:5000/team/app");

/// A cosign bundle annotation: a hashedrekord entry for (payload, signature,
/// pem) and a SET signed by `rekor`.
std::string rekorBundle(const EcKey& rekor, const std::string& payload, const std::string& signature,
                        const std::string& pem, int64_t integratedTime, int64_t logIndex = 7);

/// A trusted_root.json with `rekor` as the transparency log and `cas` (each a
/// chain, leaf-most first) as certificate authorities.
std::string trustedRootJson(const EcKey& rekor, const std::vector<std::vector<const TestCert*>>& cas);

/// One signature layer: the payload and its annotations.
struct SigLayer {
  std::string payload;
  std::map<std::string, std::string> annotations;
};

/// An OCI signature manifest for `layers` (config: `configDigest`, `configSize`).
std::string signatureManifest(const std::vector<SigLayer>& layers, const std::string& configDigest, uint64_t configSize);

/// "sha256:<hex>" of `data`.
std::string digestOf(const std::string& data);

}  // namespace airlock::test
