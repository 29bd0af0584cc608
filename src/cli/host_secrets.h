#pragma once
// The secret store of this host, as `airlock secret`, `doctor` and `info`
// open it: the Secret Service when a session bus has one, else the file
// store under the data directory. Reading the environment (whether a
// session bus exists) is the CLI's part.

#include <memory>
#include <optional>
#include <string>

#include "common/host_context.h"
#include "secrets/file_backend.h"
#include "secrets/secret_service_backend.h"
#include "secrets/secret_store.h"

namespace airlock::cli {

/// Both backends (the Secret Service only when reachable) and the store
/// over them. Not movable: the store points at the backends.
class HostSecrets {
 public:
  explicit HostSecrets(const HostContext& host);
  HostSecrets(const HostSecrets&) = delete;
  HostSecrets& operator=(const HostSecrets&) = delete;

  secrets::SecretStore& store() { return *store_; }
  /// Where new secrets go.
  const secrets::SecretBackend& preferred() const { return *preferred_; }
  /// Why the Secret Service is not used ("" when it is).
  const std::string& serviceProblem() const { return serviceProblem_; }

 private:
  std::unique_ptr<secrets::SecretServiceBackend> service_;
  secrets::FileBackend file_;
  secrets::SecretBackend* preferred_ = nullptr;
  std::string serviceProblem_;
  std::optional<secrets::SecretStore> store_;
};

}  // namespace airlock::cli
