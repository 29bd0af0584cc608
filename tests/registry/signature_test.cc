// Cosign signature verification against a real registry (docker-registry on
// loopback): images and their `sha256-<hex>.sig` signature manifests are
// built and signed here with OpenSSL (cosign's formats), pushed with skopeo,
// and pulled through the airlock binary with --verify=off|warn|require.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "image/oci/signature.h"
#include "local_registry.h"
#include "sigstore_fixture.h"
#include "support/tar_builder.h"

namespace airlock::image::oci {
namespace {

using test::kGzipLayer;

using test::busyboxLayer;
using test::EcKey;
using test::LocalRegistry;
using test::OciLayout;

const std::string kIssuer = "https://token.actions.githubusercontent.com";
const std::string kIdentity = "https://github.com/org/repo/.github/workflows/release.yml@refs/tags/v1";

class SignatureRegistryTest : public test::RegistryFixture {
 protected:
  void SetUp() override {
    RegistryFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(makeDirs(tmp_->path() + "/config/airlock"));
    ASSERT_TRUE(makeDirs(tmp_->path() + "/state"));
    keyFile_ = write("cosign.pub", key_.publicPem());
    otherKeyFile_ = write("other.pub", otherKey_.publicPem());
  }

  std::string write(const std::string& name, const std::string& text) {
    std::string p = tmp_->path() + "/" + name;
    EXPECT_TRUE(writeFileAtomic(p, text));
    return p;
  }
  std::string image(const std::string& repoTag) { return registry_->host() + "/" + repoTag; }

  // Pushes a busybox image (with `marker` as an extra layer so each image has
  // its own digest) as repo:tag; returns its manifest descriptor.
  Descriptor pushImage(const std::string& repo, const std::string& tag, const std::string& marker = "a") {
    // A layout per image, so the same tag can be pushed twice.
    OciLayout layout(tmp_->path() + "/layout-" + marker);
    auto m = layout.addImage({layout.addBlob(busyboxLayer(), kGzipLayer),
                              layout.addBlob(test::makeTar({{"marker", 'f', marker}}, "gzip"), kGzipLayer)});
    layout.tag(m, tag);
    layout.push(*registry_, repo, tag);
    return m;
  }

  // Pushes a signature manifest with `layers` at the .sig tag of `digest`.
  void pushSignatures(const std::string& repo, const std::string& digest, const std::vector<test::SigLayer>& layers) {
    auto config = layout_->addBlob(R"({"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}})",
                                   "application/vnd.oci.image.config.v1+json");
    for (const auto& l : layers) layout_->addBlob(l.payload, std::string(kSimpleSigningType));
    auto manifest = layout_->addBlob(test::signatureManifest(layers, config.digest, config.size), std::string(kOciManifest));
    const std::string tag = signatureTag(digest);
    layout_->tag(manifest, tag);
    layout_->push(*registry_, repo, tag);
  }

  // A cosign key signature (cosign sign --key) of `digest`.
  test::SigLayer keySignature(const EcKey& key, const std::string& digest) {
    std::string payload = test::simpleSigningPayload(digest);
    return {payload, {{std::string(kSignatureAnnotation), base64Encode(key.sign(payload))}}};
  }

  // The airlock binary with this test's cache, config and state directories.
  CommandOutput airlock(std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "AIRLOCK_CACHE_DIR=" + tmp_->path() + "/cache",
                                     "XDG_CONFIG_HOME=" + tmp_->path() + "/config",
                                     "XDG_STATE_HOME=" + tmp_->path() + "/state", AIRLOCK_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = runCommand(argv);
    EXPECT_TRUE(r);
    return r ? *r : CommandOutput{};
  }
  void userConfig(const std::string& yaml) { write("config/airlock/config.yaml", yaml); }
  bool stored(const std::string& digest) {
    return ::access((tmp_->path() + "/cache/oci/images/" + digest.substr(7)).c_str(), F_OK) == 0;
  }
  nlohmann::json inspect(const std::string& ref, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"image", "inspect", ref};
    args.insert(args.end(), extra.begin(), extra.end());
    auto out = airlock(args);
    EXPECT_EQ(out.exitCode, 0) << out.stderrText;
    auto j = nlohmann::json::parse(out.stdoutText, nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j["signature"];
  }

  EcKey key_, otherKey_;
  std::string keyFile_, otherKeyFile_;
};

TEST_F(SignatureRegistryTest, ValidKeySignatureIsAcceptedAndInspectShowsTheSigner) {
  auto m = pushImage("team/signed", "v1");
  pushSignatures("team/signed", m.digest, {keySignature(key_, m.digest)});
  const std::string fingerprint = *publicKeyFingerprint(key_.publicPem());

  auto pull = airlock({"image", "pull", "--verify=require", "--verify-key", keyFile_, image("team/signed:v1")});
  EXPECT_EQ(pull.exitCode, 0) << pull.stderrText;
  EXPECT_EQ(pull.stdoutText, m.digest + "\n");
  EXPECT_NE(pull.stderrText.find("signature verified: key " + fingerprint), std::string::npos) << pull.stderrText;
  EXPECT_EQ(pull.stderrText.find("warning"), std::string::npos) << pull.stderrText;
  EXPECT_TRUE(stored(m.digest));

  // The key from the user config; the stored copy verifies offline (--pull=never).
  userConfig("image_verify: require\nimage_verify_key: " + keyFile_ + "\n");
  auto again = airlock({"image", "pull", "--pull=never", image("team/signed:v1")});
  EXPECT_EQ(again.exitCode, 0) << again.stderrText;
  EXPECT_NE(again.stderrText.find("signature verified: key " + fingerprint), std::string::npos) << again.stderrText;

  auto sig = inspect(image("team/signed:v1"));
  EXPECT_EQ(sig["verified"], true) << sig.dump();
  EXPECT_EQ(sig["key"], fingerprint) << sig.dump();
  EXPECT_EQ(sig["signed_digest"], m.digest);
  // The other key does not verify it, and inspect says so.
  auto wrong = inspect(image("team/signed:v1"), {"--verify-key", otherKeyFile_});
  EXPECT_EQ(wrong["verified"], false) << wrong.dump();
  EXPECT_NE(wrong["problem"].get<std::string>().find("does not verify"), std::string::npos) << wrong.dump();
}

TEST_F(SignatureRegistryTest, WrongKeyIsRefusedByRequireAndWarnedByWarn) {
  auto m = pushImage("team/wrongkey", "v1");
  pushSignatures("team/wrongkey", m.digest, {keySignature(otherKey_, m.digest)});
  auto req = airlock({"image", "pull", "-q", "--verify=require", "--verify-key", keyFile_, image("team/wrongkey:v1")});
  EXPECT_EQ(req.exitCode, exit_code::kVerification) << req.stderrText;
  EXPECT_NE(req.stderrText.find("signature verification failed"), std::string::npos) << req.stderrText;
  EXPECT_NE(req.stderrText.find("does not verify with the key"), std::string::npos) << req.stderrText;
  EXPECT_NE(req.stderrText.find("--verify=warn"), std::string::npos) << req.stderrText;  // the way out, named
  EXPECT_FALSE(stored(m.digest)) << "refused before any layer was downloaded";

  auto warn = airlock({"image", "pull", "-q", "--verify=warn", "--verify-key", keyFile_, image("team/wrongkey:v1")});
  EXPECT_EQ(warn.exitCode, 0) << warn.stderrText;
  EXPECT_NE(warn.stderrText.find("warning: " + image("team/wrongkey:v1") + ": signature not verified"), std::string::npos)
      << warn.stderrText;
  EXPECT_EQ(std::count(warn.stderrText.begin(), warn.stderrText.end(), '\n'), 1) << warn.stderrText;
  EXPECT_TRUE(stored(m.digest));

  auto off = airlock({"image", "pull", "-q", "--verify=off", "--verify-key", keyFile_, image("team/wrongkey:v1")});
  EXPECT_EQ(off.exitCode, 0) << off.stderrText;
  EXPECT_EQ(off.stderrText, "");
  // Stored now, but require still refuses it (offline, from the stored signatures).
  auto stillNo = airlock({"image", "pull", "--pull=never", "--verify=require", "--verify-key", keyFile_,
                          image("team/wrongkey:v1")});
  EXPECT_EQ(stillNo.exitCode, exit_code::kVerification) << stillNo.stderrText;
}

TEST_F(SignatureRegistryTest, TamperedManifestIsRefusedByRequireAndWarnedByWarn) {
  // A signs A; the tag is then moved to B and A's signature copied to B's .sig tag.
  auto a = pushImage("team/tampered", "v1", "original");
  pushSignatures("team/tampered", a.digest, {keySignature(key_, a.digest)});
  auto b = pushImage("team/tampered", "v1", "tampered");
  ASSERT_NE(a.digest, b.digest);
  pushSignatures("team/tampered", b.digest, {keySignature(key_, a.digest)});

  auto req = airlock({"image", "pull", "-q", "--verify=require", "--verify-key", keyFile_, image("team/tampered:v1")});
  EXPECT_EQ(req.exitCode, exit_code::kVerification) << req.stderrText;
  EXPECT_NE(req.stderrText.find("it signs " + a.digest + ", not this image (" + b.digest + ")"), std::string::npos)
      << req.stderrText;
  EXPECT_FALSE(stored(b.digest));
  auto warn = airlock({"image", "pull", "-q", "--verify-key", keyFile_, image("team/tampered:v1")});  // default: warn
  EXPECT_EQ(warn.exitCode, 0) << warn.stderrText;
  EXPECT_NE(warn.stderrText.find("signature not verified: signature 1: it signs " + a.digest), std::string::npos)
      << warn.stderrText;
  // The original, by digest, still verifies.
  auto orig = airlock({"image", "pull", "-q", "--verify=require", "--verify-key", keyFile_,
                       image("team/tampered@" + a.digest)});
  EXPECT_EQ(orig.exitCode, 0) << orig.stderrText;
}

TEST_F(SignatureRegistryTest, MissingSignatureAndMissingKeyPerMode) {
  auto m = pushImage("team/unsigned", "v1");
  auto req = airlock({"image", "pull", "-q", "--verify=require", "--verify-key", keyFile_, image("team/unsigned:v1")});
  EXPECT_EQ(req.exitCode, exit_code::kVerification) << req.stderrText;
  EXPECT_NE(req.stderrText.find("no signature found (no " + signatureTag(m.digest) + " tag"), std::string::npos)
      << req.stderrText;
  auto warn = airlock({"image", "pull", "-q", "--verify-key", keyFile_, image("team/unsigned:v1")});
  EXPECT_EQ(warn.exitCode, 0) << warn.stderrText;
  EXPECT_NE(warn.stderrText.find("warning: "), std::string::npos);
  EXPECT_NE(warn.stderrText.find("no signature found"), std::string::npos) << warn.stderrText;

  // require with nothing to verify against: refused, naming the settings to add.
  auto nothing = airlock({"image", "pull", "-q", "--verify=require", image("team/unsigned:v1")});
  EXPECT_EQ(nothing.exitCode, exit_code::kVerification) << nothing.stderrText;
  EXPECT_NE(nothing.stderrText.find("image_verify_key"), std::string::npos) << nothing.stderrText;

  // run-image refuses before booting anything.
  userConfig("image_verify: require\nimage_verify_key: " + keyFile_ + "\n");
  auto run = airlock({"run-image", "-q", "--tty", "never", image("team/unsigned:v1"), "--", "true"});
  EXPECT_EQ(run.exitCode, exit_code::kVerification) << run.stderrText;
  EXPECT_NE(run.stderrText.find("no signature found"), std::string::npos) << run.stderrText;
}

TEST_F(SignatureRegistryTest, RepoConfigCannotLoosenVerificationForRunImage) {
  auto m = pushImage("team/agentimg", "v1");
  pushSignatures("team/agentimg", m.digest, {keySignature(otherKey_, m.digest)});
  userConfig("image_verify: require\nimage_verify_key: " + keyFile_ + "\n");
  std::string ws = tmp_->path() + "/ws";
  ASSERT_TRUE(makeDirs(ws));
  write("ws/.airlock.yaml", "image_verify: off\nimage_verify_key: " + otherKeyFile_ + "\n");
  write("ws/README", "hi\n");
  auto run = airlock({"run", "claude-code", "-q", "-w", ws, "--review=none", "--image", image("team/agentimg:v1")});
  EXPECT_EQ(run.exitCode, exit_code::kVerification) << run.stderrText;
  EXPECT_NE(run.stderrText.find("ignored image_verify: off"), std::string::npos) << run.stderrText;
  EXPECT_NE(run.stderrText.find("ignored image_verify_key: " + otherKeyFile_), std::string::npos) << run.stderrText;
  EXPECT_NE(run.stderrText.find("does not verify with the key"), std::string::npos) << run.stderrText;
}

// Keyless: a Fulcio-like CA, a Rekor key and a trusted_root.json made here.
class KeylessRegistryTest : public SignatureRegistryTest {
 protected:
  void SetUp() override {
    SignatureRegistryTest::SetUp();
    if (IsSkipped()) return;
    now_ = static_cast<int64_t>(std::time(nullptr));
    ca_ = test::makeCa("test fulcio", now_ - 86400, now_ + 86400);
    trustedRoot_ = write("trusted_root.json", test::trustedRootJson(rekor_, {{&ca_}}));
  }
  // What `cosign sign` (keyless) attaches: signature, certificate, Rekor bundle.
  test::SigLayer keylessSignature(const std::string& digest) {
    test::LeafOptions o;
    o.issuer = kIssuer;
    o.sanUri = kIdentity;
    o.notBefore = now_ - 600;
    o.notAfter = now_ - 0 + 600;
    auto leaf = test::makeLeaf(ca_, o);
    std::string payload = test::simpleSigningPayload(digest);
    std::string sig = leaf.key.sign(payload);
    return {payload,
            {{std::string(kSignatureAnnotation), base64Encode(sig)},
             {std::string(kCertificateAnnotation), leaf.pem()},
             {std::string(kChainAnnotation), ca_.pem()},
             {std::string(kBundleAnnotation), test::rekorBundle(rekor_, payload, sig, leaf.pem(), now_ - 300, 1234)}}};
  }
  void keylessConfig(const std::string& subjectRegex) {
    userConfig("image_verify: require\nimage_verify_trusted_root: " + trustedRoot_ + "\nimage_verify_issuer: " + kIssuer +
               "\nimage_verify_subject: '" + subjectRegex + "'\n");
  }
  int64_t now_ = 0;
  EcKey rekor_;
  test::TestCert ca_;
  std::string trustedRoot_;
};

TEST_F(KeylessRegistryTest, MatchingIdentityIsAccepted) {
  auto m = pushImage("team/keyless", "v1");
  pushSignatures("team/keyless", m.digest, {keylessSignature(m.digest)});
  keylessConfig(R"(^https://github\.com/org/repo/\.github/workflows/release\.yml@refs/tags/v.*$)");
  auto pull = airlock({"image", "pull", image("team/keyless:v1")});
  EXPECT_EQ(pull.exitCode, 0) << pull.stderrText;
  EXPECT_NE(pull.stderrText.find("signature verified: issuer " + kIssuer + ", subject " + kIdentity), std::string::npos)
      << pull.stderrText;
  EXPECT_NE(pull.stderrText.find("(log index 1234)"), std::string::npos) << pull.stderrText;
  auto sig = inspect(image("team/keyless:v1"));
  EXPECT_EQ(sig["verified"], true) << sig.dump();
  EXPECT_EQ(sig["issuer"], kIssuer);
  EXPECT_EQ(sig["subject"], kIdentity);
  EXPECT_EQ(sig["signed_at"], now_ - 300);
}

TEST_F(KeylessRegistryTest, NonMatchingIdentityIsRefused) {
  auto m = pushImage("team/keyless2", "v1");
  pushSignatures("team/keyless2", m.digest, {keylessSignature(m.digest)});
  keylessConfig(R"(^https://github\.com/org/other-repo/.*$)");
  auto pull = airlock({"image", "pull", "-q", image("team/keyless2:v1")});
  EXPECT_EQ(pull.exitCode, exit_code::kVerification) << pull.stderrText;
  EXPECT_NE(pull.stderrText.find("the certificate's subject '" + kIdentity + "' does not match"), std::string::npos)
      << pull.stderrText;
  EXPECT_FALSE(stored(m.digest));
  // Another CA's trusted root: the chain does not verify.
  auto otherCa = test::makeCa("test fulcio", now_ - 86400, now_ + 86400);
  write("trusted_root.json", test::trustedRootJson(rekor_, {{&otherCa}}));
  keylessConfig(".*");
  auto chain = airlock({"image", "pull", "-q", image("team/keyless2:v1")});
  EXPECT_EQ(chain.exitCode, exit_code::kVerification) << chain.stderrText;
  EXPECT_NE(chain.stderrText.find("does not chain to the trusted root"), std::string::npos) << chain.stderrText;
}

}  // namespace
}  // namespace airlock::image::oci
