#include "secrets/secret_service_backend.h"

#include <libsecret/secret.h>

namespace airlock::secrets {
namespace {

constexpr const char* kAttribute = "airlock-secret";

/// airlock's items: one string attribute, the secret's name, under a key of
/// airlock's own (a generic key such as "name" would let another program's
/// item with the same attributes replace airlock's: the Secret Service
/// replaces items whose attributes match).
const SecretSchema* schema() {
  static const SecretSchema s = [] {
    SecretSchema x{};
    x.name = "dev.airlock.Secret";
    x.flags = SECRET_SCHEMA_NONE;
    x.attributes[0] = {kAttribute, SECRET_SCHEMA_ATTRIBUTE_STRING};
    return x;
  }();
  return &s;
}

/// The message of a GError (freed), for an airlock error line.
std::string take(GError* error) {
  std::string message = error && error->message ? error->message : "unknown error";
  if (error) g_error_free(error);
  return message;
}

SecretService* serviceOf(void* p) { return static_cast<SecretService*>(p); }

}  // namespace

Result<std::unique_ptr<SecretServiceBackend>> SecretServiceBackend::connect() {
  GError* error = nullptr;
  SecretService* service = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, nullptr, &error);
  if (!service) return fail("no Secret Service on the session bus: {}", take(error));
  std::unique_ptr<SecretServiceBackend> backend(new SecretServiceBackend(service));
  // A service without an unlocked default keyring (an SSH login to a
  // desktop, a bare systemd --user bus) cannot store anything.
  SecretCollection* keyring =
      secret_collection_for_alias_sync(service, SECRET_COLLECTION_DEFAULT, SECRET_COLLECTION_NONE, nullptr, &error);
  if (error) return fail("the Secret Service did not give its default keyring: {}", take(error));
  if (!keyring) return fail("the Secret Service has no default keyring");
  const bool locked = secret_collection_get_locked(keyring);
  g_object_unref(keyring);
  if (locked) return fail("the Secret Service's default keyring is locked");
  return backend;
}

SecretServiceBackend::~SecretServiceBackend() { g_object_unref(serviceOf(service_)); }

std::string SecretServiceBackend::clearCommand(const std::string& name) {
  return std::string("secret-tool clear ") + kAttribute + " " + name;
}

Result<> SecretServiceBackend::store(const std::string& name, const std::string& value) {
  GError* error = nullptr;
  const std::string label = "airlock secret " + name;
  GHashTable* attributes = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(attributes, const_cast<char*>(kAttribute), const_cast<char*>(name.c_str()));
  SecretValue* secret = secret_value_new(value.data(), static_cast<gssize>(value.size()), "text/plain");
  gboolean ok = secret_service_store_sync(serviceOf(service_), schema(), attributes, SECRET_COLLECTION_DEFAULT,
                                          label.c_str(), secret, nullptr, &error);
  secret_value_unref(secret);
  g_hash_table_unref(attributes);
  if (!ok) return fail("the Secret Service did not store {}: {}", name, take(error));
  return {};
}

Result<std::optional<std::string>> SecretServiceBackend::lookup(const std::string& name) {
  GError* error = nullptr;
  GHashTable* attributes = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(attributes, const_cast<char*>(kAttribute), const_cast<char*>(name.c_str()));
  SecretValue* secret = secret_service_lookup_sync(serviceOf(service_), schema(), attributes, nullptr, &error);
  g_hash_table_unref(attributes);
  if (error) return fail("the Secret Service did not give {}: {}", name, take(error));
  if (!secret) return std::optional<std::string>();
  gsize length = 0;
  const gchar* data = secret_value_get(secret, &length);
  std::optional<std::string> value(std::string(data, length));
  secret_value_unref(secret);
  return value;
}

Result<> SecretServiceBackend::erase(const std::string& name) {
  GError* error = nullptr;
  GHashTable* attributes = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(attributes, const_cast<char*>(kAttribute), const_cast<char*>(name.c_str()));
  secret_service_clear_sync(serviceOf(service_), schema(), attributes, nullptr, &error);
  g_hash_table_unref(attributes);
  if (error) return fail("the Secret Service did not remove {}: {}", name, take(error));
  return {};
}

}  // namespace airlock::secrets
