#pragma once
// A real registry for tests: Debian's docker-registry (distribution 2.8)
// serving plain HTTP on 127.0.0.1 from a temporary directory, and OCI image
// layouts built in the test and pushed to it with skopeo.

#include <sys/types.h>

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/paths.h"
#include "image/oci/image_ref.h"
#include "image/oci/manifest.h"

namespace airlock::test {

/// OCI layer media types the tests push.
inline constexpr const char* kGzipLayer = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr const char* kZstdLayer = "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr const char* kTarLayer = "application/vnd.oci.image.layer.v1.tar";

/// Why the registry tests cannot run here ("" when they can).
std::string registrySkipReason();

/// How a test registry is secured.
struct RegistrySecurity {
  /// None: anyone may pull and push. Htpasswd: HTTP Basic against a bcrypt
  /// htpasswd file. Token: the registry wants a bearer token (`auth: token`)
  /// from a small token server (python3, PyJWT), which checks HTTP Basic
  /// credentials against the same htpasswd file before it issues one.
  enum class Auth { None, Htpasswd, Token };
  bool tls = false;  ///< serve HTTPS with a server cert from a CA made for the test
  Auth auth = Auth::None;
  std::string user = "tester";
  std::string password = "correct horse";
};

/// Why a secured registry cannot run here ("" when it can): openssl,
/// htpasswd and, for Token, python3 with jwt and cryptography.
std::string securedRegistrySkipReason(const RegistrySecurity& security);

/// One docker-registry process (and token server); stopped and its storage
/// removed on destruction.
class LocalRegistry {
 public:
  explicit LocalRegistry(RegistrySecurity security = {});
  ~LocalRegistry();
  LocalRegistry(const LocalRegistry&) = delete;
  LocalRegistry& operator=(const LocalRegistry&) = delete;
  /// "127.0.0.1:PORT".
  const std::string& host() const { return host_; }
  /// The file holding blob `digest` in the registry's storage.
  std::string blobFile(const std::string& digest) const;
  /// The test CA's certificate (PEM) when TLS is on.
  std::string caCert() const { return dir_ + "/ca.crt"; }
  /// A docker config directory whose config.json holds `user`:`password`
  /// for this registry (what `docker login` writes).
  std::string dockerConfig(const std::string& user, const std::string& password) const;
  /// skopeo flags to push to this registry (TLS and credentials).
  std::vector<std::string> skopeoDestFlags() const;
  const RegistrySecurity& security() const { return security_; }

 private:
  void startTokenServer(int port);
  RegistrySecurity security_;
  std::string dir_;
  std::string host_;
  pid_t pid_ = -1;
  pid_t tokenPid_ = -1;
};

/// Builds an OCI image layout directory (oci-layout, index.json, blobs/).
class OciLayout {
 public:
  explicit OciLayout(std::string dir);
  /// Stores `data` as a blob; returns its descriptor.
  image::oci::Descriptor addBlob(const std::string& data, const std::string& mediaType);
  /// A manifest for `layers` (compressed tar blobs, with media types) and a
  /// config of `arch` whose Cmd is `cmd` and whose rootfs.diff_ids are
  /// `diffIds` (default: the real uncompressed digests); returns the
  /// manifest's descriptor.
  image::oci::Descriptor addImage(const std::vector<image::oci::Descriptor>& layers, const std::string& arch = "amd64",
                                  const std::vector<std::string>& cmd = {"/bin/sh", "-c", "echo hello from the image"},
                                  const std::vector<std::string>& diffIds = {});
  /// An index over `manifests` with their platforms; returns its descriptor.
  image::oci::Descriptor addIndex(const std::vector<std::pair<image::oci::Descriptor, std::string>>& manifests);
  /// Names `top` (a manifest or index) `tag` in index.json.
  void tag(const image::oci::Descriptor& top, const std::string& tag);
  /// skopeo copy of `tag` to REGISTRY/repo:tag (with --all for indexes).
  void push(const LocalRegistry& registry, const std::string& repo, const std::string& tag, bool all = false) const;
  /// The layout's directory.
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::pair<image::oci::Descriptor, std::string>> tags_;
};

/// The common start of a registry test: a plain-HTTP LocalRegistry, a
/// temporary directory and an empty OCI layout in it to push from. Skips
/// (with the reason) where the registry cannot run.
class RegistryFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  /// REGISTRY/repoTag, parsed.
  image::oci::ImageRef ref(const std::string& repoTag) const;
  /// The names in directory `dir` (ls -A), sorted; empty when it is missing.
  static std::vector<std::string> namesIn(const std::string& dir);

  std::unique_ptr<LocalRegistry> registry_;
  std::optional<TempDir> tmp_;
  std::unique_ptr<OciLayout> layout_;
};

/// "sha256:<hex>" of a (gzip, zstd or plain) layer blob's uncompressed stream.
std::string uncompressedDigest(const std::string& blob);

/// A gzip layer with a static busybox as /bin/busybox and /bin/sh, plus `extra`.
std::string busyboxLayer();

}  // namespace airlock::test
