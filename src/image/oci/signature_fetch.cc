#include "image/oci/signature_fetch.h"

#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"

namespace airlock::image::oci {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxPayload = 1 << 20;  // simple-signing payloads are a few hundred bytes

std::string cachePath(const ImageStore& store, const std::string& manifestDigest) {
  return store.root() + "/signatures/" + manifestDigest.substr(manifestDigest.find(':') + 1) + ".json";
}

}  // namespace

Result<std::optional<SignatureSet>> fetchSignatures(RegistryClient& client, const std::vector<std::string>& digests) {
  for (const auto& digest : digests) {
    auto m = client.fetchManifest(signatureTag(digest));
    if (!m) {
      if (m.error().message.find("was not found on the registry") != std::string::npos) continue;
      return std::unexpected(m.error());
    }
    auto layers = parseSignatureManifest(m->body);
    if (!layers) return std::unexpected(layers.error());
    SignatureSet set;
    set.taggedDigest = digest;
    auto tmp = TempDir::create("/tmp", "airlock-sig-");
    if (!tmp) return std::unexpected(tmp.error());
    for (auto& l : *layers) {
      if (l.size > kMaxPayload)
        return failWith(exit_code::kVerification, "signature layer {} is {} bytes; signature payloads are small",
                        l.digest, l.size);
      Descriptor d{l.mediaType, l.digest, l.size, {}};
      const std::string dest = tmp->path() + "/" + l.digest.substr(7);
      if (auto r = client.fetchBlob(d, dest, {}); !r) return std::unexpected(r.error());
      auto payload = readFile(dest, kMaxPayload);
      if (!payload) return std::unexpected(payload.error());
      l.payload = std::move(*payload);
    }
    set.layers = std::move(*layers);
    return std::optional<SignatureSet>(std::move(set));
  }
  return std::optional<SignatureSet>{};
}

std::optional<SignatureSet> loadStoredSignatures(const ImageStore& store, const std::string& manifestDigest) {
  auto text = readFile(cachePath(store, manifestDigest), 16 << 20);
  if (!text) return std::nullopt;
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  SignatureSet set;
  if (!doc.contains("layers") || !doc["layers"].is_array()) return std::nullopt;
  set.taggedDigest = doc.value("tagged_digest", "");
  for (const auto& l : doc["layers"]) {
    if (!l.is_object()) return std::nullopt;
    SignatureLayer s;
    s.mediaType = l.value("mediaType", "");
    s.digest = l.value("digest", "");
    s.size = l.value("size", uint64_t{0});
    if (l.contains("annotations") && l["annotations"].is_object())
      for (const auto& [k, v] : l["annotations"].items())
        if (v.is_string()) s.annotations[k] = v.get<std::string>();
    auto payload = base64Decode(l.value("payload", ""));
    if (!payload) return std::nullopt;
    s.payload = std::move(*payload);
    set.layers.push_back(std::move(s));
  }
  return set;
}

Result<> storeSignatures(const ImageStore& store, const std::string& manifestDigest,
                         const std::optional<SignatureSet>& set) {
  if (auto r = makeDirs(store.root() + "/signatures"); !r) return r;
  json doc = json::object();
  doc["layers"] = json::array();
  if (set) {
    doc["tagged_digest"] = set->taggedDigest;
    for (const auto& l : set->layers)
      doc["layers"].push_back({{"mediaType", l.mediaType},
                               {"digest", l.digest},
                               {"size", l.size},
                               {"annotations", l.annotations},
                               {"payload", base64Encode(l.payload)}});
  }
  if (!set) {
    ::unlink(cachePath(store, manifestDigest).c_str());
    return {};
  }
  return ImageStore::writeAtomically(cachePath(store, manifestDigest), doc.dump());
}

Result<Signer> verifySignatureSet(const std::optional<SignatureSet>& set, const std::vector<std::string>& digests,
                                  const VerifyPolicy& policy) {
  if (!set) {
    std::string tags;
    for (const auto& d : digests) tags += (tags.empty() ? "" : " or ") + signatureTag(d);
    return failWith(exit_code::kVerification, "no signature found (no {} tag in the repository)", tags);
  }
  return verifySignatureLayers(set->layers, digests, policy);
}

std::vector<std::string> signableDigests(const ImageRecord& record) {
  std::vector<std::string> out;
  if (!record.blobs.empty() && record.blobs.front() != record.manifestDigest) out.push_back(record.blobs.front());
  out.push_back(record.manifestDigest);
  return out;
}

}  // namespace airlock::image::oci
