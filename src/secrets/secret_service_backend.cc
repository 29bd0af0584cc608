#include "secrets/secret_service_backend.h"

#include <libsecret/secret.h>

namespace airlock::secrets {
namespace {

/// airlock's items: one string attribute, the secret's name.
const SecretSchema* schema() {
  static const SecretSchema s = [] {
    SecretSchema x{};
    x.name = "dev.airlock.Secret";
    x.flags = SECRET_SCHEMA_NONE;
    x.attributes[0] = {"name", SECRET_SCHEMA_ATTRIBUTE_STRING};
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
  return std::unique_ptr<SecretServiceBackend>(new SecretServiceBackend(service));
}

SecretServiceBackend::~SecretServiceBackend() { g_object_unref(serviceOf(service_)); }

Result<> SecretServiceBackend::store(const std::string& name, const std::string& value) {
  GError* error = nullptr;
  const std::string label = "airlock secret " + name;
  GHashTable* attributes = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(attributes, const_cast<char*>("name"), const_cast<char*>(name.c_str()));
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
  g_hash_table_insert(attributes, const_cast<char*>("name"), const_cast<char*>(name.c_str()));
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
  g_hash_table_insert(attributes, const_cast<char*>("name"), const_cast<char*>(name.c_str()));
  secret_service_clear_sync(serviceOf(service_), schema(), attributes, nullptr, &error);
  g_hash_table_unref(attributes);
  if (error) return fail("the Secret Service did not remove {}: {}", name, take(error));
  return {};
}

}  // namespace airlock::secrets
