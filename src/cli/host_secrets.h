#pragma once
// The secret store of this host, as `airlock secret`, `doctor` and `info`
// open it: the Secret Service when a session bus has one with an unlocked
// default keyring, else the file store under the data directory;
// AIRLOCK_SECRET_STORE=file always uses the file store. Reading the
// environment is the CLI's part.

#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/host_context.h"
#include "secrets/file_backend.h"
#include "secrets/secret_service_backend.h"
#include "secrets/secret_store.h"

namespace airlock::cli {

/// The backends (the Secret Service only when asked for and usable) and
/// the store over them. Not movable: the store points at the backends.
/// Why AIRLOCK_SECRET_STORE names no store (unset, "" and "file" are
/// fine), as a line naming the fix; "" when it is fine.
std::string secretStoreChoiceError(const HostContext& host);

/// The token `source` names: "env:NAME" (that variable of airlock's
/// environment) or "secret:NAME" (the secret store); `what` names the
/// setting in errors ("--git-token"). Errors (kUsage) name the fix and
/// never hold a value.
Result<std::string> readTokenSource(const HostContext& host, const std::string& source, const std::string& what);

class HostSecrets {
 public:
  /// `values`: the caller reads or writes values (set, rm, doctor); when
  /// false (ls), no Secret Service is contacted.
  HostSecrets(const HostContext& host, bool values);
  HostSecrets(const HostSecrets&) = delete;
  HostSecrets& operator=(const HostSecrets&) = delete;

  secrets::SecretStore& store() { return *store_; }
  /// Where new secrets go.
  const secrets::SecretBackend& preferred() const { return *preferred_; }
  const secrets::FileBackend& fileStore() const { return file_; }
  /// Why the Secret Service is not used ("" when it is).
  const std::string& serviceProblem() const { return serviceProblem_; }
  /// Where new secrets go, for messages: "file store DIR (why not the
  /// Secret Service)" or the Secret Service's description.
  std::string where() const;

 private:
  std::unique_ptr<secrets::SecretServiceBackend> service_;
  secrets::FileBackend file_;
  secrets::SecretBackend* preferred_ = nullptr;
  std::string serviceProblem_;
  std::optional<secrets::SecretStore> store_;
};

}  // namespace airlock::cli
