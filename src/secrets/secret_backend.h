#pragma once
// Where secret values live on the host: the Secret Service (libsecret:
// gnome-keyring, KWallet) or airlock's file store. Values only; what airlock
// knows about each secret (source, expiry, last use) is in the SecretStore's
// index.

#include <optional>
#include <string>

#include "common/error.h"

namespace airlock::secrets {

/// A place that holds secret values by name.
class SecretBackend {
 public:
  virtual ~SecretBackend() = default;
  /// "secret-service" or "file".
  virtual std::string id() const = 0;
  /// Where the values are, for people ("Secret Service (gnome-keyring)",
  /// "/home/you/.local/share/airlock/secrets").
  virtual std::string describe() const = 0;
  /// Stores `value` under `name`, replacing any earlier value.
  virtual Result<> store(const std::string& name, const std::string& value) = 0;
  /// The value under `name`; nullopt when there is none.
  virtual Result<std::optional<std::string>> lookup(const std::string& name) = 0;
  /// Removes the value under `name` (no error when there is none).
  virtual Result<> erase(const std::string& name) = 0;
};

}  // namespace airlock::secrets
