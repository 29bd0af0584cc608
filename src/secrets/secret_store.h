#pragma once
// airlock's secrets on the host (`airlock secret set|ls|rm`): values in a
// SecretBackend, and an index of what airlock knows about each one (where
// its value is, where it came from, when it expires, when it was last
// used), never a value. The index is JSON at $XDG_DATA_HOME/airlock/
// secrets.json, 0600, replaced atomically under a lock; an index that is
// not a regular file of the user's (a FIFO, a symlink), or whose directory
// others could change, is refused.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/host_context.h"
#include "secrets/secret_backend.h"

namespace airlock::secrets {

/// What airlock knows about one secret (never its value).
struct SecretInfo {
  std::string name;
  std::string backend;                ///< SecretBackend::id() of the backend holding the value
  std::string source;                 ///< how it came in, e.g. "stdin"
  int64_t updatedAt = 0;              ///< Unix seconds of the last store
  std::optional<int64_t> expiresAt;   ///< Unix seconds after which the credential stops working
  std::optional<int64_t> lastUsedAt;  ///< Unix seconds of the last get()
};

/// A letter, then at most 63 letters, digits, '_', '.' or '-', without
/// ".tmp-" (names become file names, beside the file store's temporaries,
/// and keyring attributes).
bool isValidSecretName(const std::string& name);

/// The most bytes a secret value may have (64 KiB: tokens and small
/// credential files, not bulk data).
inline constexpr size_t kMaxSecretBytes = 64 * 1024;

class SecretStore {
 public:
  /// `indexPath`: the index file; `backends`: every backend reachable now,
  /// by id; `preferred`: where new values go (one of `backends`).
  SecretStore(std::string indexPath, std::map<std::string, SecretBackend*> backends, SecretBackend& preferred,
              const Clock& clock);

  /// Stores `value` (1..kMaxSecretBytes bytes) under `name` in the preferred
  /// backend, replacing an earlier value wherever it was. When the earlier
  /// value is in a store not reachable now, it stays there and `note` says
  /// so (else `note` is cleared). Errors with exit code 64: a bad name, an
  /// empty or oversized value.
  Result<> set(const std::string& name, const std::string& value, const std::string& source,
               std::optional<int64_t> expiresAt, std::string& note);
  /// The value under `name`, recording its use; nullopt when there is no
  /// such secret. Errors: its backend is not reachable now, or the backend
  /// lost the value.
  Result<std::optional<std::string>> get(const std::string& name);
  /// Every secret, by name.
  Result<std::vector<SecretInfo>> list() const;
  /// Removes the value and the entry; false when there was no such secret.
  /// An entry whose store is not reachable now is removed all the same,
  /// and `note` says its value stays in that store (else `note` is cleared).
  Result<bool> remove(const std::string& name, std::string& note);

 private:
  Result<std::map<std::string, SecretInfo>> readIndex() const;
  Result<> writeIndex(const std::map<std::string, SecretInfo>& index) const;
  Result<SecretBackend*> backendOf(const SecretInfo& info) const;
  int64_t now() const;

  std::string indexPath_;
  std::map<std::string, SecretBackend*> backends_;
  SecretBackend& preferred_;
  const Clock& clock_;
};

}  // namespace airlock::secrets
