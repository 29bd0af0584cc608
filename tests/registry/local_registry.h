#pragma once
// A real registry for tests: Debian's docker-registry (distribution 2.8)
// serving plain HTTP on 127.0.0.1 from a temporary directory, and OCI image
// layouts built in the test and pushed to it with skopeo.

#include <sys/types.h>

#include <string>
#include <vector>

#include "image/oci/manifest.h"

namespace airlock::test {

/// Why the registry tests cannot run here ("" when they can).
std::string registrySkipReason();

/// One docker-registry process; stopped and its storage removed on destruction.
class LocalRegistry {
 public:
  LocalRegistry();
  ~LocalRegistry();
  LocalRegistry(const LocalRegistry&) = delete;
  LocalRegistry& operator=(const LocalRegistry&) = delete;
  /// "127.0.0.1:PORT".
  const std::string& host() const { return host_; }
  /// The file holding blob `digest` in the registry's storage.
  std::string blobFile(const std::string& digest) const;

 private:
  std::string dir_;
  std::string host_;
  pid_t pid_ = -1;
};

/// Builds an OCI image layout directory (oci-layout, index.json, blobs/).
class OciLayout {
 public:
  explicit OciLayout(std::string dir);
  /// Stores `data` as a blob; returns its descriptor.
  image::oci::Descriptor addBlob(const std::string& data, const std::string& mediaType);
  /// A manifest for `layers` (compressed tar blobs, with media types) and a
  /// config of `arch` whose Cmd is `cmd`; returns the manifest's descriptor.
  image::oci::Descriptor addImage(const std::vector<image::oci::Descriptor>& layers, const std::string& arch = "amd64",
                                  const std::vector<std::string>& cmd = {"/bin/sh", "-c", "echo hello from the image"});
  /// An index over `manifests` with their platforms; returns its descriptor.
  image::oci::Descriptor addIndex(const std::vector<std::pair<image::oci::Descriptor, std::string>>& manifests);
  /// Names `top` (a manifest or index) `tag` in index.json.
  void tag(const image::oci::Descriptor& top, const std::string& tag);
  /// skopeo copy of `tag` to REGISTRY/repo:tag (with --all for indexes).
  void push(const LocalRegistry& registry, const std::string& repo, const std::string& tag, bool all = false) const;

 private:
  std::string dir_;
  std::vector<std::pair<image::oci::Descriptor, std::string>> tags_;
};

/// A gzip layer with a static busybox as /bin/busybox and /bin/sh, plus `extra`.
std::string busyboxLayer();

}  // namespace airlock::test
