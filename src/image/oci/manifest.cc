#include "image/oci/manifest.h"

#include <nlohmann/json.hpp>

#include "image/oci/image_ref.h"

namespace airlock::image::oci {
namespace {

using nlohmann::json;

Result<std::string> stringField(const json& obj, const char* key, bool required) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return fail("field '{}' is missing", key);
    return std::string();
  }
  if (!it->is_string()) return fail("field '{}' is not a string", key);
  return it->get<std::string>();
}

Result<std::vector<std::string>> stringList(const json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_array()) return fail("field '{}' is not a list", key);
  for (const auto& v : *it) {
    if (!v.is_string()) return fail("field '{}' holds a non-string", key);
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<Descriptor> parseDescriptor(const json& j, bool withPlatform) {
  if (!j.is_object()) return fail("a descriptor is not an object");
  Descriptor d;
  auto mt = stringField(j, "mediaType", false);
  if (!mt) return std::unexpected(mt.error());
  d.mediaType = *mt;
  auto dg = stringField(j, "digest", true);
  if (!dg) return std::unexpected(dg.error());
  if (!isValidDigest(*dg)) return fail("descriptor digest '{}' is not a sha256 digest", dg->substr(0, 80));
  d.digest = *dg;
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_unsigned()) return fail("descriptor {} has no valid size", d.digest);
  d.size = size->get<uint64_t>();
  if (withPlatform) {
    auto p = j.find("platform");
    if (p != j.end() && p->is_object()) {
      auto os = stringField(*p, "os", false);
      auto arch = stringField(*p, "architecture", false);
      auto variant = stringField(*p, "variant", false);
      if (!os || !arch || !variant) return fail("descriptor {} has a malformed platform", d.digest);
      d.platform = {*os, *arch, *variant};
    } else {
      d.platform = {"", "", ""};
    }
  }
  return d;
}

Result<ManifestDoc> parseDoc(const json& j, std::string_view contentType) {
  if (!j.is_object()) return fail("the document is not a JSON object");
  ManifestDoc doc;
  auto mt = stringField(j, "mediaType", false);
  if (!mt) return std::unexpected(mt.error());
  std::string type = !mt->empty() ? *mt : std::string(contentType.substr(0, contentType.find(';')));
  if (type.empty()) type = j.contains("manifests") ? std::string(kOciIndex) : std::string(kOciManifest);
  doc.mediaType = type;
  if (type == kOciIndex || type == kDockerList) {
    doc.isIndex = true;
    auto it = j.find("manifests");
    if (it == j.end() || !it->is_array()) return fail("the index has no 'manifests' list");
    for (const auto& m : *it) {
      auto d = parseDescriptor(m, true);
      if (!d) return std::unexpected(d.error());
      doc.manifests.push_back(std::move(*d));
    }
    return doc;
  }
  if (type != kOciManifest && type != kDockerManifest)
    return fail("media type '{}' is not an OCI or Docker schema2 manifest or index (schema1 is not supported)",
                type.substr(0, 100));
  auto cfg = j.find("config");
  if (cfg == j.end()) return fail("the manifest has no 'config'");
  auto c = parseDescriptor(*cfg, false);
  if (!c) return std::unexpected(c.error());
  doc.config = std::move(*c);
  auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) return fail("the manifest has no 'layers' list");
  for (const auto& l : *layers) {
    auto d = parseDescriptor(l, false);
    if (!d) return std::unexpected(d.error());
    doc.layers.push_back(std::move(*d));
  }
  return doc;
}

}  // namespace

std::string manifestAcceptHeader() {
  return fmt::format("Accept: {}, {}, {}, {}", kOciIndex, kOciManifest, kDockerList, kDockerManifest);
}

std::string Platform::str() const { return os + "/" + architecture + (variant.empty() ? "" : "/" + variant); }

Result<Platform> parsePlatform(std::string_view text) {
  Platform p;
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    size_t slash = text.find('/', pos);
    parts.emplace_back(text.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos));
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty())
    return fail("platform '{}' must look like os/arch[/variant], e.g. linux/amd64", text);
  p.os = parts[0];
  p.architecture = parts[1];
  if (parts.size() == 3) p.variant = parts[2];
  return p;
}

Result<ManifestDoc> parseManifest(std::string_view body, std::string_view contentType) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return fail("the manifest is not valid JSON");
  try {
    return parseDoc(j, contentType);
  } catch (const json::exception& e) {
    return fail("the manifest is malformed: {}", e.what());
  }
}

Result<Descriptor> selectPlatform(const ManifestDoc& index, const Platform& want) {
  for (const auto& d : index.manifests) {
    if (d.platform.os != want.os || d.platform.architecture != want.architecture) continue;
    if (!want.variant.empty() && d.platform.variant != want.variant) continue;
    return d;
  }
  std::string offered;
  for (const auto& d : index.manifests) {
    if (d.platform.os.empty()) continue;  // attestation manifests and the like
    offered += (offered.empty() ? "" : ", ") + d.platform.str();
  }
  return fail("the image has no {} variant (it offers: {}); choose one with --platform", want.str(),
              offered.empty() ? "none" : offered);
}

Result<LayerCompression> layerCompression(std::string_view mediaType) {
  if (mediaType == "application/vnd.oci.image.layer.v1.tar" || mediaType == "application/vnd.docker.image.rootfs.diff.tar")
    return LayerCompression::None;
  if (mediaType == "application/vnd.oci.image.layer.v1.tar+gzip" ||
      mediaType == "application/vnd.docker.image.rootfs.diff.tar.gzip")
    return LayerCompression::Gzip;
  if (mediaType == "application/vnd.oci.image.layer.v1.tar+zstd") return LayerCompression::Zstd;
  if (mediaType.find("foreign") != std::string_view::npos || mediaType.find("nondistributable") != std::string_view::npos)
    return fail("layer type '{}' is a foreign (Windows) layer, which airlock cannot boot", mediaType);
  return fail("layer type '{}' is not a tar, tar+gzip or tar+zstd layer", mediaType.substr(0, 100));
}

Result<ImageConfig> parseImageConfig(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("the image config is not a JSON object");
  try {
    ImageConfig c;
    auto arch = stringField(j, "architecture", false);
    auto os = stringField(j, "os", false);
    if (!arch || !os) return fail("the image config is malformed: {}", (!arch ? arch : os).error().message);
    c.architecture = *arch;
    c.os = *os;
    if (auto rootfs = j.find("rootfs"); rootfs != j.end() && !rootfs->is_null()) {
      if (!rootfs->is_object()) return fail("the image config's 'rootfs' is not an object");
      auto ids = stringList(*rootfs, "diff_ids");
      if (!ids) return fail("the image config is malformed: {}", ids.error().message);
      for (const auto& id : *ids)
        if (!isValidDigest(id)) return fail("the image config's diff_id '{}' is not a sha256 digest", id.substr(0, 80));
      c.diffIds = std::move(*ids);
    }
    auto it = j.find("config");
    if (it == j.end() || it->is_null()) return c;
    if (!it->is_object()) return fail("the image config's 'config' is not an object");
    const json& cfg = *it;
    auto user = stringField(cfg, "User", false);
    auto wd = stringField(cfg, "WorkingDir", false);
    auto env = stringList(cfg, "Env");
    auto ep = stringList(cfg, "Entrypoint");
    auto cmd = stringList(cfg, "Cmd");
    for (const Error* e : {user ? nullptr : &user.error(), wd ? nullptr : &wd.error(), env ? nullptr : &env.error(),
                           ep ? nullptr : &ep.error(), cmd ? nullptr : &cmd.error()})
      if (e) return fail("the image config is malformed: {}", e->message);
    c.user = *user;
    c.workingDir = *wd;
    c.env = *env;
    c.entrypoint = *ep;
    c.cmd = *cmd;
    return c;
  } catch (const json::exception& e) {
    return fail("the image config is malformed: {}", e.what());
  }
}

}  // namespace airlock::image::oci
