#pragma once
// The freedesktop.org Secret Service (org.freedesktop.secrets on the session
// bus: gnome-keyring, KWallet, KeePassXC) through libsecret. Items use the
// schema "dev.airlock.Secret" with one attribute, `airlock-secret` (the
// secret's name), and go into the default collection (the login keyring).

#include <memory>

#include "secrets/secret_backend.h"

namespace airlock::secrets {

class SecretServiceBackend final : public SecretBackend {
 public:
  /// Connects to the Secret Service of the session bus and opens a session
  /// with it. Errors: no session bus, no Secret Service on it, or no
  /// unlocked default keyring (nothing could be stored). Call it
  /// only when a session bus exists (DBUS_SESSION_BUS_ADDRESS, or
  /// $XDG_RUNTIME_DIR/bus): GLib would otherwise try to autolaunch one.
  static Result<std::unique_ptr<SecretServiceBackend>> connect();
  ~SecretServiceBackend() override;
  std::string id() const override { return "secret-service"; }
  /// The command that removes airlock's item `name` from the keyring by
  /// hand (libsecret's secret-tool), for when airlock cannot reach it.
  static std::string clearCommand(const std::string& name);
  std::string describe() const override { return "Secret Service (org.freedesktop.secrets on the session bus)"; }
  Result<> store(const std::string& name, const std::string& value) override;
  Result<std::optional<std::string>> lookup(const std::string& name) override;
  Result<> erase(const std::string& name) override;

 private:
  explicit SecretServiceBackend(void* service) : service_(service) {}
  void* service_;  ///< SecretService*, one reference
};

}  // namespace airlock::secrets
