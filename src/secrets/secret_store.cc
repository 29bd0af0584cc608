#include "secrets/secret_store.h"

#include <nlohmann/json.hpp>

#include <chrono>

#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"

namespace airlock::secrets {
namespace {

using nlohmann::json;

/// Index files are small; a bigger one is not airlock's.
constexpr size_t kMaxIndexBytes = 1 << 20;

std::string parentOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

}  // namespace

bool isValidSecretName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!letter(name[0])) return false;
  for (char c : name)
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '-') return false;
  return true;
}

SecretStore::SecretStore(std::string indexPath, std::map<std::string, SecretBackend*> backends,
                         SecretBackend& preferred, const Clock& clock)
    : indexPath_(std::move(indexPath)), backends_(std::move(backends)), preferred_(preferred), clock_(clock) {}

int64_t SecretStore::now() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_.now().time_since_epoch()).count();
}

Result<std::map<std::string, SecretInfo>> SecretStore::readIndex() const {
  std::map<std::string, SecretInfo> index;
  if (!pathExists(indexPath_)) return index;
  auto text = readFile(indexPath_, kMaxIndexBytes);
  if (!text) return fail("cannot read the secret index {}: {}", indexPath_, text.error().message);
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("secrets") || !doc["secrets"].is_object())
    return fail("the secret index {} is not airlock's JSON; move it away (the values stay in their backend)",
                indexPath_);
  for (const auto& [name, entry] : doc["secrets"].items()) {
    if (!isValidSecretName(name) || !entry.is_object()) continue;
    SecretInfo info;
    info.name = name;
    info.backend = entry.value("backend", "");
    info.source = entry.value("source", "");
    info.updatedAt = entry.value("updated_at", int64_t{0});
    if (entry.contains("expires_at") && entry["expires_at"].is_number_integer())
      info.expiresAt = entry["expires_at"].get<int64_t>();
    if (entry.contains("last_used_at") && entry["last_used_at"].is_number_integer())
      info.lastUsedAt = entry["last_used_at"].get<int64_t>();
    index.emplace(name, std::move(info));
  }
  return index;
}

Result<> SecretStore::writeIndex(const std::map<std::string, SecretInfo>& index) const {
  json secrets = json::object();
  for (const auto& [name, info] : index) {
    json entry = {{"backend", info.backend}, {"source", info.source}, {"updated_at", info.updatedAt}};
    if (info.expiresAt) entry["expires_at"] = *info.expiresAt;
    if (info.lastUsedAt) entry["last_used_at"] = *info.lastUsedAt;
    secrets[name] = std::move(entry);
  }
  json doc = {{"version", 1}, {"secrets", std::move(secrets)}};
  if (auto made = makeDirs(parentOf(indexPath_), 0700); !made) return made;
  return writeFileAtomic(indexPath_, doc.dump(2) + "\n", 0600);
}

Result<SecretBackend*> SecretStore::backendOf(const SecretInfo& info) const {
  auto it = backends_.find(info.backend);
  if (it == backends_.end())
    return fail("the secret {} is in the {} store, which is not reachable now{}", info.name, info.backend,
                info.backend == "secret-service" ? " (no Secret Service on a session bus)" : "");
  return it->second;
}

Result<> SecretStore::set(const std::string& name, const std::string& value, const std::string& source,
                          std::optional<int64_t> expiresAt) {
  if (!isValidSecretName(name))
    return fail("'{}' is not a secret name: a letter, then letters, digits, '_', '.' or '-' (at most 64)", name);
  if (value.empty()) return fail("the value of {} is empty", name);
  if (value.size() > kMaxSecretBytes)
    return fail("the value of {} has {} bytes; at most {} are kept", name, value.size(), kMaxSecretBytes);
  if (auto made = makeDirs(parentOf(indexPath_), 0700); !made) return made;
  auto lock = FileLock::acquire(indexPath_ + ".lock", "the secret index", {});
  if (!lock) return std::unexpected(lock.error());
  auto index = readIndex();
  if (!index) return std::unexpected(index.error());
  if (auto old = index->find(name); old != index->end() && old->second.backend != preferred_.id()) {
    // Moving to the preferred backend: the old copy goes once the new one is in.
    if (auto from = backendOf(old->second); from) {
      if (auto stored = preferred_.store(name, value); !stored) return stored;
      if (auto erased = (*from)->erase(name); !erased) return erased;
    } else {
      return std::unexpected(from.error());
    }
  } else if (auto stored = preferred_.store(name, value); !stored) {
    return stored;
  }
  SecretInfo info{name, preferred_.id(), source, now(), expiresAt, std::nullopt};
  (*index)[name] = std::move(info);
  return writeIndex(*index);
}

Result<std::optional<std::string>> SecretStore::get(const std::string& name) {
  if (!pathExists(indexPath_)) return std::optional<std::string>();
  auto lock = FileLock::acquire(indexPath_ + ".lock", "the secret index", {});
  if (!lock) return std::unexpected(lock.error());
  auto index = readIndex();
  if (!index) return std::unexpected(index.error());
  auto it = index->find(name);
  if (it == index->end()) return std::optional<std::string>();
  auto backend = backendOf(it->second);
  if (!backend) return std::unexpected(backend.error());
  auto value = (*backend)->lookup(name);
  if (!value) return std::unexpected(value.error());
  if (!*value)
    return fail("the {} store lost the value of {}; set it again (airlock secret set {})", it->second.backend,
                name, name);
  it->second.lastUsedAt = now();
  if (auto written = writeIndex(*index); !written) return std::unexpected(written.error());
  return value;
}

Result<std::vector<SecretInfo>> SecretStore::list() const {
  auto index = readIndex();
  if (!index) return std::unexpected(index.error());
  std::vector<SecretInfo> out;
  for (auto& [name, info] : *index) out.push_back(std::move(info));
  return out;
}

Result<bool> SecretStore::remove(const std::string& name) {
  if (!pathExists(indexPath_)) return false;
  auto lock = FileLock::acquire(indexPath_ + ".lock", "the secret index", {});
  if (!lock) return std::unexpected(lock.error());
  auto index = readIndex();
  if (!index) return std::unexpected(index.error());
  auto it = index->find(name);
  if (it == index->end()) return false;
  auto backend = backendOf(it->second);
  if (!backend) return std::unexpected(backend.error());
  if (auto erased = (*backend)->erase(name); !erased) return std::unexpected(erased.error());
  index->erase(it);
  if (auto written = writeIndex(*index); !written) return std::unexpected(written.error());
  return true;
}

}  // namespace airlock::secrets
