#pragma once
// SHA-256 digests (OpenSSL EVP), as lowercase hex.

#include <string>
#include <string_view>

#include "common/error.h"

namespace airlock {

/// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view data);
  /// Finishes and returns 64 lowercase hex characters.
  std::string hex();

 private:
  void* ctx_;
};

/// SHA-256 of a byte string, hex.
std::string sha256Hex(std::string_view data);

/// SHA-256 of a file's contents, hex. Opens with O_NOFOLLOW.
Result<std::string> sha256File(const std::string& path);

}  // namespace airlock
