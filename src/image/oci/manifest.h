#pragma once
// Parsing of registry documents: image indexes (OCI index, Docker manifest
// list), image manifests (OCI, Docker schema2) and image configs. Input is
// untrusted JSON; every function returns an error instead of throwing, and
// every digest is checked to be a sha256 digest before it is used as a name.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::image::oci {

inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kDockerList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";

/// The Accept header value for manifest requests: all four types above.
std::string manifestAcceptHeader();

/// An OS/architecture[/variant] pair, e.g. linux/amd64 or linux/arm64/v8.
struct Platform {
  std::string os = "linux";
  std::string architecture = "amd64";
  std::string variant;  ///< empty = any
  std::string str() const;
};

/// Parses "os/arch[/variant]" (e.g. from --platform).
Result<Platform> parsePlatform(std::string_view text);

/// A content descriptor: what a manifest says about a blob or a child manifest.
struct Descriptor {
  std::string mediaType;
  std::string digest;  ///< always a valid sha256 digest
  uint64_t size = 0;
  Platform platform;   ///< index entries only
};

/// A parsed registry document: either an index (manifests set) or an image
/// manifest (config and layers set).
struct ManifestDoc {
  bool isIndex = false;
  std::string mediaType;
  std::vector<Descriptor> manifests;  ///< index: the per-platform manifests
  Descriptor config;                  ///< manifest: the image config blob
  std::vector<Descriptor> layers;     ///< manifest: layers, base first
};

/// Parses `body`; `contentType` is the HTTP Content-Type (may be empty; the
/// document's own mediaType, or its shape, decides then).
Result<ManifestDoc> parseManifest(std::string_view body, std::string_view contentType);

/// Picks the entry of `index` for `want`: same OS and architecture, and the
/// same variant when `want` has one; the first such entry in index order.
/// Errors list the platforms the index offers.
Result<Descriptor> selectPlatform(const ManifestDoc& index, const Platform& want);

/// How a layer blob is compressed, from its media type.
enum class LayerCompression { None, Gzip, Zstd };

/// Maps a layer media type to its compression; refuses non-layer and
/// foreign (non-distributable) types, naming them.
Result<LayerCompression> layerCompression(std::string_view mediaType);

/// The parts of an image config that decide how the image runs.
struct ImageConfig {
  std::string architecture;
  std::string os;
  std::string user;                      ///< "name", "uid", "uid:gid", ... (empty = root)
  std::vector<std::string> env;          ///< NAME=VALUE
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string workingDir;
  std::vector<std::string> diffIds;      ///< rootfs.diff_ids: digests of the uncompressed layers, base first
};

/// Parses an image config blob.
Result<ImageConfig> parseImageConfig(std::string_view body);

}  // namespace airlock::image::oci
