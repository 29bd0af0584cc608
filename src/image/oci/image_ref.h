#pragma once
// Image references as users write them ("ubuntu", "ghcr.io/org/app:1.2",
// "127.0.0.1:5000/x@sha256:..."), normalized the way docker does: a first
// component without '.', ':' or "localhost" is not a registry, so it is
// docker.io, and single-name docker.io repositories live under "library/".

#include <string>
#include <string_view>

#include "common/error.h"

namespace airlock::image::oci {

/// A parsed, normalized image reference.
struct ImageRef {
  std::string registry;    ///< "docker.io", "ghcr.io", "127.0.0.1:5000"
  std::string repository;  ///< "library/ubuntu"
  std::string tag;         ///< "latest" unless a digest alone was given
  std::string digest;      ///< "sha256:<64 hex>" when pinned, else empty

  /// "registry/repository[:tag][@digest]", the normalized form.
  std::string str() const;
  /// "registry/repository:tag" or, without a tag, "registry/repository@digest":
  /// the name under which the image store lists it.
  std::string name() const;
  /// Tag or digest: what the manifest is fetched by (the digest wins).
  std::string reference() const { return digest.empty() ? tag : digest; }
  /// The host (and port) of the registry's API: registry-1.docker.io for docker.io.
  std::string endpoint() const;
};

/// Parses and normalizes `text`. Errors (exit code kUsage) quote the reference
/// and say which part is malformed.
Result<ImageRef> parseImageRef(std::string_view text);

/// True for "sha256:" followed by 64 lowercase hex digits, the only digest
/// form airlock accepts (digests become file names in the store).
bool isValidDigest(std::string_view digest);

/// True when `host` ("127.0.0.1:5000", "localhost", "[::1]:443") is a
/// loopback address.
bool isLoopbackHost(std::string_view host);

}  // namespace airlock::image::oci
