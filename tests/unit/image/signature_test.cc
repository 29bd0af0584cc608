// Cosign signature verification with keys, a CA and a Rekor key made here.

#include "common/encoding.h"
#include "image/oci/signature.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <ctime>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/sha256.h"
#include "sigstore_fixture.h"

namespace airlock::image::oci {
namespace {

using test::EcKey;
using test::LeafOptions;
using test::TestCert;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kOther = "sha256:" + std::string(64, 'b');
const std::string kIssuer = "https://token.actions.githubusercontent.com";
const std::string kSubjectRe = R"(^https://github\.com/org/repo/\.github/workflows/release\.yml@refs/tags/v.*$)";

SignatureLayer layer(const std::string& payload, const std::string& signature) {
  SignatureLayer l;
  l.mediaType = std::string(kSimpleSigningType);
  l.payload = payload;
  l.digest = test::digestOf(payload);
  l.size = payload.size();
  l.annotations[std::string(kSignatureAnnotation)] = base64Encode(signature);
  return l;
}

TEST(SignatureFormat, SignatureTagFollowsCosign) {
  EXPECT_EQ(signatureTag("sha256:" + std::string(64, 'c')), "sha256-" + std::string(64, 'c') + ".sig");
}

TEST(SignatureFormat, SignatureManifestLayersAndAnnotations) {
  test::SigLayer a{test::simpleSigningPayload(kDigest), {{"dev.cosignproject.cosign/signature", "MEUC"}}};
  auto layers = parseSignatureManifest(test::signatureManifest({a}, kOther, 233));
  ASSERT_TRUE(layers) << layers.error().message;
  ASSERT_EQ(layers->size(), 1u);
  EXPECT_EQ((*layers)[0].mediaType, kSimpleSigningType);
  EXPECT_EQ((*layers)[0].digest, test::digestOf(a.payload));
  EXPECT_EQ((*layers)[0].size, a.payload.size());
  EXPECT_EQ((*layers)[0].annotations.at("dev.cosignproject.cosign/signature"), "MEUC");
  EXPECT_FALSE(parseSignatureManifest("not json"));
  EXPECT_FALSE(parseSignatureManifest(R"({"layers":[{"digest":"sha256:../../x","size":1}]})"));
  EXPECT_FALSE(parseSignatureManifest(R"({"layers":{}})"));
  auto bad = parseSignatureManifest("[]");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, exit_code::kVerification);
}

TEST(SignatureFormat, SimpleSigningPayload) {
  auto d = simpleSigningDigest(test::simpleSigningPayload(kDigest));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, kDigest);
  EXPECT_FALSE(simpleSigningDigest(R"({"critical":{"type":"something else","image":{"docker-manifest-digest":"x"}}})"));
  EXPECT_FALSE(simpleSigningDigest(R"({"critical":{"type":"cosign container image signature","image":{}}})"));
  EXPECT_FALSE(simpleSigningDigest("{"));
}

TEST(SignatureFormat, Rfc3339) {
  EXPECT_EQ(parseRfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parseRfc3339("2021-10-07T13:56:59.123Z"), 1633615019);
  EXPECT_FALSE(parseRfc3339("2021-10-07 13:56:59Z"));
  EXPECT_FALSE(parseRfc3339("2021-10-07T13:56:59+02:00"));
}

TEST(KeySignature, ValidSignatureIsAccepted) {
  EcKey key;
  std::string payload = test::simpleSigningPayload(kDigest);
  VerifyPolicy policy{.publicKeyPem = key.publicPem(), .keySource = "cosign.pub"};
  auto signer = verifySignatureLayers({layer(payload, key.sign(payload))}, {kDigest}, policy);
  ASSERT_TRUE(signer) << signer.error().message;
  EXPECT_FALSE(signer->keyless);
  EXPECT_EQ(signer->keyFingerprint, "sha256:" + sha256Hex(key.spkiDer()));
  EXPECT_EQ(signer->keyFingerprint, *publicKeyFingerprint(key.publicPem()));
  EXPECT_EQ(signer->digest, kDigest);
  EXPECT_EQ(signer->signedAt, 0);
  // A signature of the index digest counts for its platform manifest too.
  auto viaIndex = verifySignatureLayers({layer(payload, key.sign(payload))}, {kDigest, kOther}, policy);
  EXPECT_TRUE(viaIndex);
}

TEST(KeySignature, WrongKeyTamperedPayloadAndOtherDigestAreRefused) {
  EcKey key, other;
  std::string payload = test::simpleSigningPayload(kDigest);
  VerifyPolicy policy{.publicKeyPem = key.publicPem(), .keySource = "cosign.pub"};

  auto wrongKey = verifySignatureLayers({layer(payload, other.sign(payload))}, {kDigest}, policy);
  ASSERT_FALSE(wrongKey);
  EXPECT_EQ(wrongKey.error().code, exit_code::kVerification);
  EXPECT_NE(wrongKey.error().message.find("does not verify with the key"), std::string::npos) << wrongKey.error().message;

  // The payload rewritten to name another image (digest updated), old signature.
  std::string forged = test::simpleSigningPayload(kOther);
  auto tampered = verifySignatureLayers({layer(forged, key.sign(payload))}, {kOther}, policy);
  ASSERT_FALSE(tampered);
  EXPECT_NE(tampered.error().message.find("does not verify"), std::string::npos) << tampered.error().message;

  // A valid signature, but of another manifest than the one pulled.
  auto otherImage = verifySignatureLayers({layer(payload, key.sign(payload))}, {kOther}, policy);
  ASSERT_FALSE(otherImage);
  EXPECT_NE(otherImage.error().message.find("it signs " + kDigest), std::string::npos) << otherImage.error().message;

  // A payload that does not hash to its layer digest.
  auto l = layer(payload, key.sign(payload));
  l.payload += " ";
  EXPECT_FALSE(verifySignatureLayers({l}, {kDigest}, policy));

  auto noAnnotation = layer(payload, key.sign(payload));
  noAnnotation.annotations.clear();
  auto none = verifySignatureLayers({noAnnotation}, {kDigest}, policy);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no dev.cosignproject.cosign/signature"), std::string::npos);

  auto wrongType = layer(payload, key.sign(payload));
  wrongType.mediaType = "application/vnd.oci.image.layer.v1.tar";
  EXPECT_FALSE(verifySignatureLayers({wrongType}, {kDigest}, policy));

  EXPECT_FALSE(verifySignatureLayers({}, {kDigest}, policy));
  // The second layer verifies: enough.
  EXPECT_TRUE(verifySignatureLayers({layer(payload, other.sign(payload)), layer(payload, key.sign(payload))}, {kDigest},
                                    policy));
}

TEST(KeySignature, NonEcdsaKeyIsRefused) {
  EVP_PKEY* ed = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  ASSERT_TRUE(ed);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(bio, ed);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  EVP_PKEY_free(ed);
  std::string payload = test::simpleSigningPayload(kDigest);
  auto r = verifySignatureLayers({layer(payload, "x")}, {kDigest}, {.publicKeyPem = pem, .keySource = "ed.pub"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not an ECDSA key"), std::string::npos) << r.error().message;
  EXPECT_FALSE(publicKeyFingerprint("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"));
  // A non-ECDSA key is refused when it is configured, not only at the first signature.
  auto fingerprint = publicKeyFingerprint(pem);
  ASSERT_FALSE(fingerprint);
  EXPECT_NE(fingerprint.error().message.find("not an ECDSA key"), std::string::npos) << fingerprint.error().message;
}

// A Fulcio-like world: root CA, intermediate, Rekor key, all made here.
class Keyless : public ::testing::Test {
 protected:
  void SetUp() override {
    now_ = static_cast<int64_t>(std::time(nullptr));
    root_ = test::makeCa("test fulcio root", now_ - 86400 * 30, now_ + 86400 * 365);
    intermediate_ = test::makeCa("test fulcio intermediate", now_ - 86400 * 30, now_ + 86400 * 365, &root_);
    auto parsed = parseTrustedRoot(test::trustedRootJson(rekor_, {{&intermediate_, &root_}}));
    ASSERT_TRUE(parsed) << parsed.error().message;
    trusted_ = *parsed;
  }
  // Fulcio leaves live 10 minutes; this one was issued an hour ago and the
  // entry logged inside its window, so it is expired now but valid then.
  LeafOptions leafOptions() {
    LeafOptions o;
    o.notBefore = now_ - 3600;
    o.notAfter = now_ - 3000;
    return o;
  }
  SignatureLayer signedLayer(const TestCert& leaf, const std::string& digest, int64_t loggedAt,
                             const EcKey* rekor = nullptr) {
    std::string payload = test::simpleSigningPayload(digest);
    std::string sig = leaf.key.sign(payload);
    auto l = layer(payload, sig);
    l.annotations[std::string(kCertificateAnnotation)] = leaf.pem();
    l.annotations[std::string(kChainAnnotation)] = intermediate_.pem() + root_.pem();
    l.annotations[std::string(kBundleAnnotation)] =
        test::rekorBundle(rekor ? *rekor : rekor_, payload, sig, leaf.pem(), loggedAt, 42);
    return l;
  }
  VerifyPolicy policy(std::string subject = kSubjectRe, std::string issuer = kIssuer) {
    VerifyPolicy p;
    p.trustedRoot = trusted_;
    p.issuer = std::move(issuer);
    p.subjectRegex = std::move(subject);
    return p;
  }
  int64_t now_ = 0;
  EcKey rekor_;
  TestCert root_, intermediate_;
  TrustedRoot trusted_;
};

TEST_F(Keyless, MatchingIdentityIsAccepted) {
  auto leaf = test::makeLeaf(intermediate_, leafOptions());
  auto signer = verifySignatureLayers({signedLayer(leaf, kDigest, now_ - 3300)}, {kDigest}, policy());
  ASSERT_TRUE(signer) << signer.error().message;
  EXPECT_TRUE(signer->keyless);
  EXPECT_EQ(signer->issuer, kIssuer);
  EXPECT_EQ(signer->subject, "https://github.com/org/repo/.github/workflows/release.yml@refs/tags/v1");
  EXPECT_EQ(signer->signedAt, now_ - 3300);
  EXPECT_EQ(signer->logIndex, 42);
  EXPECT_NE(signer->describe().find("issuer " + kIssuer), std::string::npos);
}

TEST_F(Keyless, LegacyIssuerExtensionAndEmailSubject) {
  auto o = leafOptions();
  o.issuerV2 = false;
  o.issuer = "https://accounts.google.com";
  o.sanUri.clear();
  o.sanEmail = "release@example.com";
  auto leaf = test::makeLeaf(intermediate_, o);
  auto signer = verifySignatureLayers({signedLayer(leaf, kDigest, now_ - 3300)}, {kDigest},
                                      policy(R"(release@example\.com)", "https://accounts.google.com"));
  ASSERT_TRUE(signer) << signer.error().message;
  EXPECT_EQ(signer->subject, "release@example.com");
}

TEST_F(Keyless, NonMatchingIdentityIsRefused) {
  auto leaf = test::makeLeaf(intermediate_, leafOptions());
  auto l = signedLayer(leaf, kDigest, now_ - 3300);
  auto subject = verifySignatureLayers({l}, {kDigest}, policy(R"(^https://github\.com/org/other/.*$)"));
  ASSERT_FALSE(subject);
  EXPECT_EQ(subject.error().code, exit_code::kVerification);
  EXPECT_NE(subject.error().message.find("subject"), std::string::npos) << subject.error().message;
  // The regex must match the whole SAN, not a part of it.
  EXPECT_FALSE(verifySignatureLayers({l}, {kDigest}, policy(R"(github\.com/org/repo)")));
  auto issuer = verifySignatureLayers({l}, {kDigest}, policy(kSubjectRe, "https://accounts.google.com"));
  ASSERT_FALSE(issuer);
  EXPECT_NE(issuer.error().message.find("OIDC issuer is '" + kIssuer + "'"), std::string::npos) << issuer.error().message;
}

TEST_F(Keyless, CertificateMustChainToTheTrustedRootAtLogTime) {
  // Another CA with the same names: not trusted.
  auto rogueRoot = test::makeCa("test fulcio root", now_ - 86400, now_ + 86400);
  auto rogue = test::makeLeaf(rogueRoot, leafOptions());
  auto r = verifySignatureLayers({signedLayer(rogue, kDigest, now_ - 3300)}, {kDigest}, policy());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not chain to the trusted root"), std::string::npos) << r.error().message;
  // Logged after the certificate expired.
  auto leaf = test::makeLeaf(intermediate_, leafOptions());
  auto late = verifySignatureLayers({signedLayer(leaf, kDigest, now_ - 60)}, {kDigest}, policy());
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message.find("expired"), std::string::npos) << late.error().message;
  // A leaf without the codeSigning usage.
  auto o = leafOptions();
  o.codeSigning = false;
  auto plain = test::makeLeaf(intermediate_, o);
  auto noEku = verifySignatureLayers({signedLayer(plain, kDigest, now_ - 3300)}, {kDigest}, policy());
  ASSERT_FALSE(noEku);
  EXPECT_NE(noEku.error().message.find("code signing"), std::string::npos) << noEku.error().message;
}

TEST_F(Keyless, IntermediateFromTheSignatureChainsToATrustedRootOnly) {
  auto onlyRoot = parseTrustedRoot(test::trustedRootJson(rekor_, {{&root_}}));
  ASSERT_TRUE(onlyRoot);
  auto p = policy();
  p.trustedRoot = *onlyRoot;
  auto leaf = test::makeLeaf(intermediate_, leafOptions());
  auto l = signedLayer(leaf, kDigest, now_ - 3300);
  EXPECT_TRUE(verifySignatureLayers({l}, {kDigest}, p));
  l.annotations.erase(std::string(kChainAnnotation));  // the intermediate is then unknown
  EXPECT_FALSE(verifySignatureLayers({l}, {kDigest}, p));
}

TEST_F(Keyless, TransparencyLogEvidenceIsRequiredAndChecked) {
  auto leaf = test::makeLeaf(intermediate_, leafOptions());
  auto noBundle = signedLayer(leaf, kDigest, now_ - 3300);
  noBundle.annotations.erase(std::string(kBundleAnnotation));
  auto r = verifySignatureLayers({noBundle}, {kDigest}, policy());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("transparency-log entry"), std::string::npos) << r.error().message;

  EcKey otherRekor;
  auto foreign = verifySignatureLayers({signedLayer(leaf, kDigest, now_ - 3300, &otherRekor)}, {kDigest}, policy());
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message.find("does not list"), std::string::npos) << foreign.error().message;

  // The SET covers integratedTime: moving the time breaks it.
  auto moved = signedLayer(leaf, kDigest, now_ - 3300);
  auto& b = moved.annotations[std::string(kBundleAnnotation)];
  auto j = nlohmann::json::parse(b);
  j["Payload"]["integratedTime"] = now_ - 3400;
  b = j.dump();
  auto set = verifySignatureLayers({moved}, {kDigest}, policy());
  ASSERT_FALSE(set);
  EXPECT_NE(set.error().message.find("signed entry timestamp does not verify"), std::string::npos) << set.error().message;

  // A logged entry for another signature (replayed bundle).
  auto a = signedLayer(leaf, kDigest, now_ - 3300);
  auto other = signedLayer(leaf, kDigest, now_ - 3300);
  a.annotations[std::string(kBundleAnnotation)] = test::rekorBundle(rekor_, a.payload, "not the signature", leaf.pem(),
                                                                    now_ - 3300);
  auto replay = verifySignatureLayers({a}, {kDigest}, policy());
  ASSERT_FALSE(replay);
  EXPECT_NE(replay.error().message.find("another signature"), std::string::npos) << replay.error().message;
  EXPECT_TRUE(verifySignatureLayers({other}, {kDigest}, policy()));
}

TEST(TrustedRootFile, ParsesSigstoreTrustedRoot) {
  EcKey rekor;
  auto ca = test::makeCa("ca", 0, 4102444800);
  auto root = parseTrustedRoot(test::trustedRootJson(rekor, {{&ca}}));
  ASSERT_TRUE(root) << root.error().message;
  ASSERT_EQ(root->tlogs.size(), 1u);
  EXPECT_EQ(root->tlogs[0].logId, sha256Hex(rekor.spkiDer()));
  EXPECT_EQ(root->tlogs[0].keyDer, rekor.spkiDer());
  EXPECT_EQ(root->tlogs[0].validFrom, *parseRfc3339("2020-01-01T00:00:00Z"));
  ASSERT_EQ(root->authorities.size(), 1u);
  EXPECT_EQ(root->authorities[0].chainDer[0], ca.der());
  EXPECT_FALSE(parseTrustedRoot(R"({"mediaType":"application/json","tlogs":[]})"));
  EXPECT_FALSE(parseTrustedRoot(R"({"tlogs":[],"certificateAuthorities":[]})"));
  EXPECT_FALSE(parseTrustedRoot("[1,2]"));
}

}  // namespace
}  // namespace airlock::image::oci
