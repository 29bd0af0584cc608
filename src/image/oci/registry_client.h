#pragma once
// A client for one repository of an OCI distribution / Docker registry v2
// API, over libcurl: manifests by tag or digest, blobs streamed to disk and
// verified against their SHA-256 digest before they are renamed into place.
//
// Auth follows the registry's WWW-Authenticate challenge: Bearer (a token
// from the realm, anonymous or with the docker config's credentials) or
// Basic. Redirects (to blob storage) are followed, never to other schemes
// than http(s); curl drops the Authorization header on a host change.
// Transient failures (connection errors, 408/429/5xx) are retried with
// exponential backoff, and a blob download resumes from what it already has
// (HTTP Range), also across airlock runs. TLS uses the system trust store or
// --ca-cert; plain HTTP is used only for loopback registries and hosts given
// with --insecure-registry, and only after TLS was refused.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "image/oci/image_ref.h"
#include "image/oci/manifest.h"

namespace airlock::image::oci {

/// How to reach registries.
struct RegistryOptions {
  std::string caCert;                            ///< extra CA bundle (PEM) for TLS; empty = system store only
  std::vector<std::string> insecureRegistries;   ///< hosts that may be spoken to over plain HTTP
  std::string dockerConfigDir;                   ///< docker config directory (dockerConfigDir()); empty = anonymous
  int attempts = 4;                              ///< tries per request (transient failures)
  std::chrono::milliseconds backoff{250};        ///< first retry delay; doubles each time
};

/// A manifest or index as the registry served it.
struct FetchedManifest {
  std::string body;
  std::string contentType;
  std::string digest;  ///< sha256 of `body`, verified against a requested digest
};

/// Called while a blob downloads: bytes on disk so far and the blob's size.
using BlobProgressFn = std::function<void(uint64_t done, uint64_t total)>;

/// One repository on one registry. Safe to use from several threads at once
/// (each request has its own curl handle; the auth token is shared).
class RegistryClient {
 public:
  RegistryClient(const ImageRef& ref, RegistryOptions options);

  /// Fetches the manifest or index at `reference` (a tag or a digest). When
  /// `reference` is a digest, the body must hash to it (kImage otherwise).
  Result<FetchedManifest> fetchManifest(const std::string& reference);

  /// Downloads the blob `blob` to `dest`: streamed into `dest`.partial
  /// (resumed when one exists, locked against concurrent downloads), size and
  /// SHA-256 checked, then renamed. A mismatch deletes the partial file and
  /// fails with kImage. Returns the bytes transferred over the network.
  Result<uint64_t> fetchBlob(const Descriptor& blob, const std::string& dest, const BlobProgressFn& progress);

 private:
  struct Response;
  using Sink = std::function<bool(long status, const char*, size_t)>;  ///< 2xx bodies only
  /// Sends a GET for `path` on the registry, with auth and up to `attempts` tries.
  Result<Response> send(const std::string& path, const std::vector<std::string>& headers, const Sink& sink, int attempts);
  Result<Response> sendOnce(const std::string& url, const std::vector<std::string>& headers, const Sink& sink);
  Result<> authenticate(const std::string& challengeHeader);
  std::string authHeader();

  ImageRef ref_;
  RegistryOptions options_;
  bool allowHttp_ = false;
  std::mutex mu_;
  std::string scheme_ = "https";
  std::string authHeader_;
};

}  // namespace airlock::image::oci
