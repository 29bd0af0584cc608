#include "image/oci/signature.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/c_ptr.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/sha256.h"

namespace airlock::image::oci {
namespace {

using json = nlohmann::json;

using PkeyPtr = CPtr<EVP_PKEY, EVP_PKEY_free>;
using X509Ptr = CPtr<X509, X509_free>;
using BioPtr = CPtr<BIO, BIO_free_all>;
using MdCtxPtr = CPtr<EVP_MD_CTX, EVP_MD_CTX_free>;
using StorePtr = CPtr<X509_STORE, X509_STORE_free>;
using StoreCtxPtr = CPtr<X509_STORE_CTX, X509_STORE_CTX_free>;
struct StackDeleter {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};
using X509StackPtr = std::unique_ptr<STACK_OF(X509), StackDeleter>;

std::unexpected<Error> refuse(std::string message) {
  return std::unexpected(Error{std::move(message), exit_code::kVerification});
}

BioPtr memBio(std::string_view data) { return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size()))); }

PkeyPtr keyFromSpki(std::string_view der) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  return PkeyPtr(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
}

X509Ptr certFromDer(std::string_view der) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  X509Ptr cert(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
  if (cert && p != reinterpret_cast<const unsigned char*>(der.data() + der.size())) return nullptr;  // trailing bytes
  return cert;
}

std::string spkiDer(EVP_PKEY* key) {
  unsigned char* out = nullptr;
  int n = i2d_PUBKEY(key, &out);
  if (n <= 0) return {};
  std::string der(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  OPENSSL_free(out);
  return der;
}

std::string certDer(X509* cert) {
  unsigned char* out = nullptr;
  int n = i2d_X509(cert, &out);
  if (n <= 0) return {};
  std::string der(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  OPENSSL_free(out);
  return der;
}

/// Every certificate in a PEM text, in order.
std::vector<X509Ptr> certsFromPem(std::string_view pem) {
  std::vector<X509Ptr> out;
  auto bio = memBio(pem);
  while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(c);
  return out;
}

/// The DER of the first certificate, else of the public key, in `pem`;
/// empty when it holds neither. Used to compare what Rekor recorded.
std::string pemIdentityDer(std::string_view pem) {
  auto certs = certsFromPem(pem);
  if (!certs.empty()) return certDer(certs.front().get());
  auto bio = memBio(pem);
  PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  return key ? spkiDer(key.get()) : std::string();
}


const json* path(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(k);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string stringAt(const json& j, std::initializer_list<const char*> keys) {
  const json* v = path(j, keys);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

bool validAt(int64_t t, int64_t from, int64_t until) { return t >= from && (until == 0 || t <= until); }

Result<std::pair<int64_t, int64_t>> validFor(const json& entry, std::initializer_list<const char*> at,
                                             const std::string& what) {
  const json* v = path(entry, at);
  int64_t from = 0, until = 0;
  if (v && v->is_object()) {
    if (auto s = stringAt(*v, {"start"}); !s.empty()) {
      auto t = parseRfc3339(s);
      if (!t) return refuse(fmt::format("trusted root: {}: bad validFor.start '{}'", what, s));
      from = *t;
    }
    if (auto s = stringAt(*v, {"end"}); !s.empty()) {
      auto t = parseRfc3339(s);
      if (!t) return refuse(fmt::format("trusted root: {}: bad validFor.end '{}'", what, s));
      until = *t;
    }
  }
  return std::pair{from, until};
}

/// The OIDC issuer of a Fulcio certificate: extension 1.3.6.1.4.1.57264.1.8
/// (a DER UTF8String), else the deprecated .1.1 (the raw string).
std::string fulcioIssuer(X509* cert) {
  for (const char* oid : {"1.3.6.1.4.1.57264.1.8", "1.3.6.1.4.1.57264.1.1"}) {
    CPtr<ASN1_OBJECT, ASN1_OBJECT_free> obj(OBJ_txt2obj(oid, 1));
    if (!obj) continue;
    int idx = X509_get_ext_by_OBJ(cert, obj.get(), -1);
    if (idx < 0) continue;
    ASN1_OCTET_STRING* data = X509_EXTENSION_get_data(X509_get_ext(cert, idx));
    const unsigned char* p = ASN1_STRING_get0_data(data);
    int len = ASN1_STRING_length(data);
    if (std::string_view(oid).ends_with(".8")) {
      CPtr<ASN1_UTF8STRING, ASN1_UTF8STRING_free> s(
          d2i_ASN1_UTF8STRING(nullptr, &p, len));
      if (!s) continue;
      return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s.get())),
                         static_cast<size_t>(ASN1_STRING_length(s.get())));
    }
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
  }
  return {};
}

/// The certificate's SAN identities: URIs and email addresses.
std::vector<std::string> sanIdentities(X509* cert) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type == GEN_URI || n->type == GEN_EMAIL) {
      ASN1_IA5STRING* s = n->type == GEN_URI ? n->d.uniformResourceIdentifier : n->d.rfc822Name;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), static_cast<size_t>(ASN1_STRING_length(s)));
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

/// Verifies `leaf` (with `intermediates` from the signature) up to a CA of
/// `root` valid at `when`, checked at time `when`; and that it is a code
/// signing certificate.
Result<> verifyChain(X509* leaf, const std::vector<X509Ptr>& intermediates, const TrustedRoot& root, int64_t when) {
  StorePtr store(X509_STORE_new());
  size_t trusted = 0;
  for (const auto& ca : root.authorities) {
    if (!validAt(when, ca.validFrom, ca.validUntil)) continue;
    for (const auto& der : ca.chainDer)
      if (auto c = certFromDer(der)) {
        X509_STORE_add_cert(store.get(), c.get());
        ++trusted;
      }
  }
  if (trusted == 0)
    return refuse(fmt::format("no certificate authority of the trusted root was valid at {}", formatUtcTime(when)));
  X509StackPtr untrusted(sk_X509_new_null());
  for (const auto& c : intermediates) {
    X509_up_ref(c.get());
    sk_X509_push(untrusted.get(), c.get());
  }
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store.get(), leaf, untrusted.get()) != 1)
    return refuse("cannot set up certificate verification");
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, static_cast<time_t>(when));
  // The trusted root's certificates are trust anchors even when they are
  // intermediates (the trusted root names them; it need not include a root).
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
  if (X509_verify_cert(ctx.get()) != 1)
    return refuse(fmt::format("the certificate does not chain to the trusted root at {}: {}", formatUtcTime(when),
                              X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()))));
  if (!(X509_get_extension_flags(leaf) & EXFLAG_XKUSAGE) || !(X509_get_extended_key_usage(leaf) & XKU_CODE_SIGN))
    return refuse("the certificate is not for code signing (no codeSigning extended key usage)");
  return {};
}

}  // namespace

std::string signatureTag(std::string_view digest) {
  std::string out(digest);
  if (auto colon = out.find(':'); colon != std::string::npos) out[colon] = '-';
  return out + ".sig";
}

Result<std::vector<SignatureLayer>> parseSignatureManifest(std::string_view body) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return refuse("the signature manifest is not a JSON object");
  auto layers = doc.find("layers");
  if (layers == doc.end() || !layers->is_array()) return refuse("the signature manifest has no layers");
  std::vector<SignatureLayer> out;
  for (const auto& l : *layers) {
    if (!l.is_object()) return refuse("a signature manifest layer is not an object");
    SignatureLayer s;
    s.mediaType = stringAt(l, {"mediaType"});
    s.digest = stringAt(l, {"digest"});
    if (!s.digest.starts_with("sha256:") || s.digest.size() != 71 ||
        s.digest.find_first_not_of("0123456789abcdef", 7) != std::string::npos)
      return refuse(fmt::format("a signature layer has a bad digest '{}'", s.digest));
    auto size = l.find("size");
    if (size == l.end() || !size->is_number_unsigned()) return refuse("a signature layer has no size");
    s.size = size->get<uint64_t>();
    if (auto a = l.find("annotations"); a != l.end() && a->is_object())
      for (const auto& [k, v] : a->items())
        if (v.is_string()) s.annotations[k] = v.get<std::string>();
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::string> simpleSigningDigest(std::string_view payload) {
  json doc = json::parse(payload, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return refuse("the signed payload is not JSON");
  std::string type = stringAt(doc, {"critical", "type"});
  if (type != "cosign container image signature")
    return refuse(fmt::format("the signed payload is of type '{}', not a cosign container image signature", type));
  std::string digest = stringAt(doc, {"critical", "image", "docker-manifest-digest"});
  if (digest.empty()) return refuse("the signed payload has no critical.image.docker-manifest-digest");
  return digest;
}

Result<std::string> publicKeyFingerprint(std::string_view pem) {
  auto bio = memBio(pem);
  PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return refuse("not a PEM public key (expected -----BEGIN PUBLIC KEY-----, as `cosign public-key` prints)");
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_EC)
    return refuse("not an ECDSA key; cosign signing keys are ECDSA P-256 (`cosign generate-key-pair`)");
  return "sha256:" + sha256Hex(spkiDer(key.get()));
}

Result<bool> verifyWithSpki(std::string_view der, std::string_view data, std::string_view signature) {
  PkeyPtr key = keyFromSpki(der);
  if (!key) return refuse("the public key is not a DER SubjectPublicKeyInfo");
  MdCtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1)
    return refuse("the public key cannot verify SHA-256 signatures");
  int rc = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return rc == 1;
}

std::optional<int64_t> parseRfc3339(std::string_view s) {
  std::tm tm{};
  if (s.size() < 20) return std::nullopt;
  auto num = [&](size_t at, size_t n) -> int {
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return -1;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':') return std::nullopt;
  int y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), se = num(17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60)
    return std::nullopt;
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  }
  if (i + 1 != s.size() || (s[i] != 'Z' && s[i] != 'z')) return std::nullopt;  // UTC only, as Sigstore writes it
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  return static_cast<int64_t>(timegm(&tm));
}

Result<TrustedRoot> parseTrustedRoot(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return refuse("the trusted root is not a JSON object");
  std::string mediaType = stringAt(doc, {"mediaType"});
  if (!mediaType.empty() && !mediaType.starts_with("application/vnd.dev.sigstore.trustedroot"))
    return refuse(fmt::format("the trusted root has media type '{}', not application/vnd.dev.sigstore.trustedroot+json",
                              mediaType));
  TrustedRoot root;
  if (auto t = doc.find("tlogs"); t != doc.end() && t->is_array()) {
    for (const auto& entry : *t) {
      TransparencyLog log;
      auto key = base64Decode(stringAt(entry, {"publicKey", "rawBytes"}));
      if (!key || key->empty() || !keyFromSpki(*key)) return refuse("trusted root: a tlogs entry has no usable publicKey.rawBytes");
      log.keyDer = *key;
      auto id = base64Decode(stringAt(entry, {"logId", "keyId"}));
      log.logId = id && !id->empty() ? hexEncode(*id) : sha256Hex(*key);
      auto valid = validFor(entry, {"publicKey", "validFor"}, "tlogs");
      if (!valid) return std::unexpected(valid.error());
      std::tie(log.validFrom, log.validUntil) = *valid;
      root.tlogs.push_back(std::move(log));
    }
  }
  if (auto c = doc.find("certificateAuthorities"); c != doc.end() && c->is_array()) {
    for (const auto& entry : *c) {
      CertificateAuthority ca;
      const json* certs = path(entry, {"certChain", "certificates"});
      if (!certs || !certs->is_array() || certs->empty())
        return refuse("trusted root: a certificateAuthorities entry has no certChain.certificates");
      for (const auto& cert : *certs) {
        auto der = base64Decode(stringAt(cert, {"rawBytes"}));
        if (!der || !certFromDer(*der)) return refuse("trusted root: a CA certificate is not DER X.509 (rawBytes)");
        ca.chainDer.push_back(*der);
      }
      auto valid = validFor(entry, {"validFor"}, "certificateAuthorities");
      if (!valid) return std::unexpected(valid.error());
      std::tie(ca.validFrom, ca.validUntil) = *valid;
      root.authorities.push_back(std::move(ca));
    }
  }
  if (root.tlogs.empty() || root.authorities.empty())
    return refuse("the trusted root needs at least one tlogs entry (Rekor) and one certificateAuthorities entry (Fulcio)");
  return root;
}

std::string Signer::describe() const {
  std::string out = keyless ? fmt::format("issuer {}, subject {}", issuer, subject) : "key " + keyFingerprint;
  if (signedAt) out += fmt::format(", logged at {} (log index {})", formatUtcTime(signedAt), logIndex);
  return out;
}

Result<RekorBundle> parseRekorBundle(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return refuse("the Rekor bundle is not a JSON object");
  RekorBundle b;
  b.setBase64 = stringAt(doc, {"SignedEntryTimestamp"});
  b.bodyBase64 = stringAt(doc, {"Payload", "body"});
  b.logId = stringAt(doc, {"Payload", "logID"});
  const json* t = path(doc, {"Payload", "integratedTime"});
  const json* i = path(doc, {"Payload", "logIndex"});
  if (b.setBase64.empty() || b.bodyBase64.empty() || b.logId.empty() || !t || !t->is_number_integer() || !i ||
      !i->is_number_integer())
    return refuse("the Rekor bundle lacks SignedEntryTimestamp or Payload.{body,integratedTime,logIndex,logID}");
  b.integratedTime = t->get<int64_t>();
  b.logIndex = i->get<int64_t>();
  return b;
}

std::string rekorSetPayload(const RekorBundle& b) {
  // nlohmann::json objects keep keys sorted and dump() has no whitespace:
  // the RFC 8785 canonical form for these strings and integers.
  json j = {{"body", b.bodyBase64}, {"integratedTime", b.integratedTime}, {"logID", b.logId}, {"logIndex", b.logIndex}};
  return j.dump();
}

Result<> verifyRekorBundle(const RekorBundle& bundle, const TrustedRoot& root, std::string_view payload,
                           std::string_view signature, std::string_view publicKeyPem) {
  const TransparencyLog* log = nullptr;
  for (const auto& l : root.tlogs)
    if (l.logId == bundle.logId) log = &l;
  if (!log) return refuse(fmt::format("the Rekor entry is from log {}, which the trusted root does not list", bundle.logId));
  if (!validAt(bundle.integratedTime, log->validFrom, log->validUntil))
    return refuse(fmt::format("the Rekor key was not valid at the entry's time {}", formatUtcTime(bundle.integratedTime)));
  auto set = base64Decode(bundle.setBase64);
  if (!set) return refuse("the signed entry timestamp is not base64");
  auto ok = verifyWithSpki(log->keyDer, rekorSetPayload(bundle), *set);
  if (!ok) return std::unexpected(ok.error());
  if (!*ok) return refuse("the signed entry timestamp does not verify with the trusted root's Rekor key");
  auto body = base64Decode(bundle.bodyBase64);
  if (!body) return refuse("the Rekor entry body is not base64");
  json entry = json::parse(*body, nullptr, false);
  if (entry.is_discarded() || !entry.is_object()) return refuse("the Rekor entry body is not JSON");
  if (stringAt(entry, {"kind"}) != "hashedrekord")
    return refuse(fmt::format("the Rekor entry is of kind '{}'; only hashedrekord entries are supported",
                              stringAt(entry, {"kind"})));
  if (stringAt(entry, {"spec", "data", "hash", "algorithm"}) != "sha256" ||
      stringAt(entry, {"spec", "data", "hash", "value"}) != sha256Hex(payload))
    return refuse("the Rekor entry records another payload hash than the signed payload's");
  auto loggedSig = base64Decode(stringAt(entry, {"spec", "signature", "content"}));
  if (!loggedSig || *loggedSig != signature) return refuse("the Rekor entry records another signature");
  auto loggedKey = base64Decode(stringAt(entry, {"spec", "signature", "publicKey", "content"}));
  std::string want = pemIdentityDer(publicKeyPem);
  if (!loggedKey || want.empty() || pemIdentityDer(*loggedKey) != want)
    return refuse("the Rekor entry records another certificate or key than the signature's");
  return {};
}

Result<Signer> verifySignatureLayers(const std::vector<SignatureLayer>& layers, const std::vector<std::string>& digests,
                                     const VerifyPolicy& policy) {
  const bool keyless = policy.trustedRoot && !policy.issuer.empty() && !policy.subjectRegex.empty();
  if (policy.publicKeyPem.empty() && !keyless)
    return refuse("nothing to verify against: no public key and no keyless identity (trusted root, issuer, subject)");
  std::optional<std::regex> subjectRe;
  if (keyless) {
    try {
      subjectRe.emplace(policy.subjectRegex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return failWith(exit_code::kUsage, "the subject regex '{}' is invalid: {}", policy.subjectRegex, e.what());
    }
  }
  std::vector<std::string> reasons;
  if (layers.empty()) reasons.push_back("the signature manifest has no signatures");
  for (size_t n = 0; n < layers.size(); ++n) {
    const SignatureLayer& l = layers[n];
    auto why = [&](std::string text) { reasons.push_back(fmt::format("signature {}: {}", n + 1, text)); };
    if (l.mediaType != kSimpleSigningType) {
      why(fmt::format("layer type {} is not a simple-signing payload", l.mediaType));
      continue;
    }
    if ("sha256:" + sha256Hex(l.payload) != l.digest) {
      why("the payload does not match its digest");
      continue;
    }
    auto signed_ = simpleSigningDigest(l.payload);
    if (!signed_) {
      why(signed_.error().message);
      continue;
    }
    if (std::find(digests.begin(), digests.end(), *signed_) == digests.end()) {
      why(fmt::format("it signs {}, not this image ({})", *signed_, digests.empty() ? "?" : digests.back()));
      continue;
    }
    auto sigText = l.annotations.find(std::string(kSignatureAnnotation));
    if (sigText == l.annotations.end()) {
      why(fmt::format("no {} annotation", kSignatureAnnotation));
      continue;
    }
    auto sig = base64Decode(sigText->second);
    if (!sig) {
      why("the signature annotation is not base64");
      continue;
    }
    std::optional<RekorBundle> bundle;
    if (auto b = l.annotations.find(std::string(kBundleAnnotation)); b != l.annotations.end()) {
      auto parsed = parseRekorBundle(b->second);
      if (!parsed) {
        why(parsed.error().message);
        continue;
      }
      bundle = *parsed;
    }
    auto cert = l.annotations.find(std::string(kCertificateAnnotation));
    if (!policy.publicKeyPem.empty()) {
      auto bio = memBio(policy.publicKeyPem);
      PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
      if (!key) return refuse(fmt::format("{} is not a PEM public key", policy.keySource));
      if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_EC)
        return refuse(fmt::format("{} is not an ECDSA key (cosign keys are ECDSA P-256)", policy.keySource));
      auto ok = verifyWithSpki(spkiDer(key.get()), l.payload, *sig);
      if (ok && *ok) {
        Signer s;
        s.keyFingerprint = "sha256:" + sha256Hex(spkiDer(key.get()));
        s.digest = *signed_;
        if (bundle && policy.trustedRoot) {
          if (auto r = verifyRekorBundle(*bundle, *policy.trustedRoot, l.payload, *sig, policy.publicKeyPem); !r) {
            why(r.error().message);
            continue;
          }
          s.signedAt = bundle->integratedTime;
          s.logIndex = bundle->logIndex;
        }
        return s;
      }
      if (!keyless || cert == l.annotations.end()) {
        why(fmt::format("the signature does not verify with the key {} ({})",
                        "sha256:" + sha256Hex(spkiDer(key.get())), policy.keySource));
        continue;
      }
    }
    if (!keyless) continue;
    if (cert == l.annotations.end()) {
      why("no certificate (keyless) and no key configured that verifies it");
      continue;
    }
    auto certs = certsFromPem(cert->second);
    if (certs.empty()) {
      why("the certificate annotation is not a PEM certificate");
      continue;
    }
    X509* leaf = certs.front().get();
    if (!bundle) {
      why("a keyless signature needs a transparency-log entry (dev.sigstore.cosign/bundle); it has none");
      continue;
    }
    if (auto r = verifyRekorBundle(*bundle, *policy.trustedRoot, l.payload, *sig, cert->second); !r) {
      why(r.error().message);
      continue;
    }
    std::vector<X509Ptr> chain;
    if (auto c = l.annotations.find(std::string(kChainAnnotation)); c != l.annotations.end()) chain = certsFromPem(c->second);
    if (auto r = verifyChain(leaf, chain, *policy.trustedRoot, bundle->integratedTime); !r) {
      why(r.error().message);
      continue;
    }
    PkeyPtr leafKey(X509_get_pubkey(leaf));
    auto ok = leafKey ? verifyWithSpki(spkiDer(leafKey.get()), l.payload, *sig) : Result<bool>(false);
    if (!ok || !*ok) {
      why("the signature does not verify with the certificate's key");
      continue;
    }
    std::string issuer = fulcioIssuer(leaf);
    if (issuer != policy.issuer) {
      why(fmt::format("the certificate's OIDC issuer is '{}', not '{}'", issuer, policy.issuer));
      continue;
    }
    std::string subject;
    for (const auto& id : sanIdentities(leaf))
      if (std::regex_match(id, *subjectRe)) subject = id;
    if (subject.empty()) {
      auto ids = sanIdentities(leaf);
      why(fmt::format("the certificate's subject '{}' does not match '{}'", ids.empty() ? "" : ids.front(),
                      policy.subjectRegex));
      continue;
    }
    Signer s;
    s.keyless = true;
    s.issuer = issuer;
    s.subject = subject;
    s.signedAt = bundle->integratedTime;
    s.logIndex = bundle->logIndex;
    s.digest = *signed_;
    return s;
  }
  std::string all;
  for (const auto& r : reasons) all += (all.empty() ? "" : "; ") + r;
  return refuse(all);
}

}  // namespace airlock::image::oci
