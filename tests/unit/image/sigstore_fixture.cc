#include "sigstore_fixture.h"

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "common/sha256.h"
#include "image/oci/signature.h"

namespace airlock::test {
namespace {

using json = nlohmann::json;

std::string bioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("openssl: ") + what);
}

void addExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

void addRawExt(X509* cert, const char* oid, const std::string& bytes) {
  ASN1_OBJECT* obj = OBJ_txt2obj(oid, 1);
  ASN1_OCTET_STRING* os = ASN1_OCTET_STRING_new();
  ASN1_OCTET_STRING_set(os, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  X509_EXTENSION* ext = X509_EXTENSION_create_by_OBJ(nullptr, obj, 0, os);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  ASN1_OCTET_STRING_free(os);
  ASN1_OBJECT_free(obj);
}

std::shared_ptr<X509> newCert(const std::string& cn, const EcKey& key, int64_t notBefore, int64_t notAfter) {
  static long serial = 1000;
  std::shared_ptr<X509> cert(X509_new(), X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), ++serial);
  ASN1_TIME_set(X509_getm_notBefore(cert.get()), static_cast<time_t>(notBefore));
  ASN1_TIME_set(X509_getm_notAfter(cert.get()), static_cast<time_t>(notAfter));
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("airlock-test"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_pubkey(cert.get(), key.get());
  return cert;
}

}  // namespace

EcKey::EcKey() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  check(k != nullptr, "EVP_EC_gen");
  key_.reset(k, EVP_PKEY_free);
}

std::string EcKey::publicPem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, key_.get());
  return bioText(bio);
}

std::string EcKey::spkiDer() const {
  unsigned char* out = nullptr;
  int n = i2d_PUBKEY(key_.get(), &out);
  std::string der(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  OPENSSL_free(out);
  return der;
}

std::string EcKey::sign(std::string_view data) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  check(EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_.get()) == 1, "DigestSignInit");
  size_t len = 0;
  check(EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1, "len");
  std::string sig(len, '\0');
  check(EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                       reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1,
        "DigestSign");
  EVP_MD_CTX_free(ctx);
  sig.resize(len);
  return sig;
}

std::string TestCert::pem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert.get());
  return bioText(bio);
}

std::string TestCert::der() const {
  unsigned char* out = nullptr;
  int n = i2d_X509(cert.get(), &out);
  std::string d(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  OPENSSL_free(out);
  return d;
}

TestCert makeCa(const std::string& commonName, int64_t notBefore, int64_t notAfter, const TestCert* parent) {
  TestCert ca;
  ca.cert = newCert(commonName, ca.key, notBefore, notAfter);
  X509* issuer = parent ? parent->cert.get() : ca.cert.get();
  X509_set_issuer_name(ca.cert.get(), X509_get_subject_name(issuer));
  addExt(ca.cert.get(), issuer, NID_basic_constraints, "critical,CA:TRUE");
  addExt(ca.cert.get(), issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
  addExt(ca.cert.get(), issuer, NID_subject_key_identifier, "hash");
  check(X509_sign(ca.cert.get(), parent ? parent->key.get() : ca.key.get(), EVP_sha256()) > 0, "X509_sign ca");
  return ca;
}

TestCert makeLeaf(const TestCert& ca, const LeafOptions& o) {
  TestCert leaf;
  leaf.cert = newCert("", leaf.key, o.notBefore, o.notAfter);
  X509_set_issuer_name(leaf.cert.get(), X509_get_subject_name(ca.cert.get()));
  addExt(leaf.cert.get(), ca.cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  addExt(leaf.cert.get(), ca.cert.get(), NID_key_usage, "critical,digitalSignature");
  if (o.codeSigning) addExt(leaf.cert.get(), ca.cert.get(), NID_ext_key_usage, "codeSigning");
  std::string san = !o.sanUri.empty() ? "critical,URI:" + o.sanUri : "critical,email:" + o.sanEmail;
  addExt(leaf.cert.get(), ca.cert.get(), NID_subject_alt_name, san.c_str());
  if (o.issuerV2) {
    ASN1_UTF8STRING* s = ASN1_UTF8STRING_new();
    ASN1_STRING_set(s, o.issuer.data(), static_cast<int>(o.issuer.size()));
    unsigned char* der = nullptr;
    int n = i2d_ASN1_UTF8STRING(s, &der);
    addRawExt(leaf.cert.get(), "1.3.6.1.4.1.57264.1.8", std::string(reinterpret_cast<char*>(der), static_cast<size_t>(n)));
    OPENSSL_free(der);
    ASN1_UTF8STRING_free(s);
  } else {
    addRawExt(leaf.cert.get(), "1.3.6.1.4.1.57264.1.1", o.issuer);
  }
  check(X509_sign(leaf.cert.get(), ca.key.get(), EVP_sha256()) > 0, "X509_sign leaf");
  return leaf;
}

std::string simpleSigningPayload(const std::string& digest, const std::string& repo) {
  json j = {{"critical",
             {{"identity", {{"docker-reference", repo}}},
              {"image", {{"docker-manifest-digest", digest}}},
              {"type", "cosign container image signature"}}},
            {"optional", nullptr}};
  return j.dump();
}

std::string rekorBundle(const EcKey& rekor, const std::string& payload, const std::string& signature,
                        const std::string& pem, int64_t integratedTime, int64_t logIndex) {
  using airlock::base64Encode;
  json entry = {{"apiVersion", "0.0.1"},
                {"kind", "hashedrekord"},
                {"spec",
                 {{"data", {{"hash", {{"algorithm", "sha256"}, {"value", sha256Hex(payload)}}}}},
                  {"signature", {{"content", base64Encode(signature)}, {"publicKey", {{"content", base64Encode(pem)}}}}}}}};
  image::oci::RekorBundle b;
  b.bodyBase64 = base64Encode(entry.dump());
  b.integratedTime = integratedTime;
  b.logIndex = logIndex;
  b.logId = sha256Hex(rekor.spkiDer());
  b.setBase64 = base64Encode(rekor.sign(image::oci::rekorSetPayload(b)));
  json j = {{"SignedEntryTimestamp", b.setBase64},
            {"Payload", {{"body", b.bodyBase64}, {"integratedTime", b.integratedTime}, {"logIndex", b.logIndex},
                         {"logID", b.logId}}}};
  return j.dump();
}

std::string trustedRootJson(const EcKey& rekor, const std::vector<std::vector<const TestCert*>>& cas) {
  using airlock::base64Encode;
  std::string id;
  {
    std::string hex = sha256Hex(rekor.spkiDer());
    for (size_t i = 0; i < hex.size(); i += 2) id += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  json root = {{"mediaType", "application/vnd.dev.sigstore.trustedroot+json;version=0.1"},
               {"tlogs",
                {{{"baseUrl", "https://rekor.test"},
                  {"hashAlgorithm", "SHA2_256"},
                  {"publicKey",
                   {{"rawBytes", base64Encode(rekor.spkiDer())},
                    {"keyDetails", "PKIX_ECDSA_P256_SHA_256"},
                    {"validFor", {{"start", "2020-01-01T00:00:00Z"}}}}},
                  {"logId", {{"keyId", base64Encode(id)}}}}}},
               {"certificateAuthorities", json::array()},
               {"ctlogs", json::array()},
               {"timestampAuthorities", json::array()}};
  for (const auto& chain : cas) {
    json certs = json::array();
    for (const TestCert* c : chain) certs.push_back({{"rawBytes", base64Encode(c->der())}});
    root["certificateAuthorities"].push_back({{"subject", {{"organization", "airlock-test"}, {"commonName", "test"}}},
                                              {"uri", "https://fulcio.test"},
                                              {"certChain", {{"certificates", certs}}},
                                              {"validFor", {{"start", "2020-01-01T00:00:00Z"}}}});
  }
  return root.dump(2);
}

std::string signatureManifest(const std::vector<SigLayer>& layers, const std::string& configDigest, uint64_t configSize) {
  json list = json::array();
  for (const auto& l : layers)
    list.push_back({{"mediaType", "application/vnd.dev.cosign.simplesigning.v1+json"},
                    {"digest", digestOf(l.payload)},
                    {"size", l.payload.size()},
                    {"annotations", l.annotations}});
  json m = {{"schemaVersion", 2},
            {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
            {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", configDigest}, {"size", configSize}}},
            {"layers", list}};
  return m.dump();
}

std::string digestOf(const std::string& data) { return "sha256:" + sha256Hex(data); }

}  // namespace airlock::test
