#include "secrets/secret_store.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "secrets/file_backend.h"
#include "secrets/secret_service_backend.h"

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
  return name.find(".tmp-") == std::string::npos;  // the file store's temporaries
}

SecretStore::SecretStore(std::string indexPath, std::map<std::string, SecretBackend*> backends,
                         SecretBackend& preferred, const Clock& clock)
    : indexPath_(std::move(indexPath)), backends_(std::move(backends)), preferred_(preferred), clock_(clock) {}

int64_t SecretStore::now() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_.now().time_since_epoch()).count();
}

Result<std::map<std::string, SecretInfo>> SecretStore::readIndex() const {
  std::map<std::string, SecretInfo> index;
  if (auto ok = checkDirectoryChain(parentOf(indexPath_)); !ok) return std::unexpected(ok.error());
  Fd fd(::open(indexPath_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd && errno == ENOENT) return index;
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      st.st_size > static_cast<off_t>(kMaxIndexBytes))
    return failWith(exit_code::kHostNotReady, "the secret index {} is not a regular file of yours (at most 1 MiB); "
                    "move it away", indexPath_);
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (readFull(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return fail("cannot read the secret index {}: {}", indexPath_, errnoText(errno));
  const Error notOurs{fmt::format("the secret index {} is not airlock's JSON; move it away (the values stay in "
                                  "their store)",
                                  indexPath_),
                      exit_code::kHostNotReady};
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("secrets") || !doc["secrets"].is_object())
    return std::unexpected(notOurs);
  if (doc.contains("version") && (!doc["version"].is_number_integer() || doc["version"].get<int64_t>() > 1))
    return failWith(exit_code::kHostNotReady, "the secret index {} is of a newer airlock (version {}); use that one",
                    indexPath_, doc["version"].dump());
  auto time = [](const json& entry, const char* key) -> std::optional<int64_t> {
    auto it = entry.find(key);
    if (it == entry.end() || !it->is_number_integer()) return std::nullopt;
    int64_t t = it->get<int64_t>();
    return t >= 0 && t < (int64_t{1} << 40) ? std::optional<int64_t>(t) : std::nullopt;  // before year 36812
  };
  for (const auto& [name, entry] : doc["secrets"].items()) {
    if (!isValidSecretName(name) || !entry.is_object()) return std::unexpected(notOurs);
    auto backend = entry.find("backend");
    auto source = entry.find("source");
    if (backend == entry.end() || !backend->is_string() || (source != entry.end() && !source->is_string()))
      return std::unexpected(notOurs);
    SecretInfo info;
    info.name = name;
    info.backend = backend->get<std::string>();
    info.source = source == entry.end() ? "" : source->get<std::string>();
    info.updatedAt = time(entry, "updated_at").value_or(0);
    info.expiresAt = time(entry, "expires_at");
    info.lastUsedAt = time(entry, "last_used_at");
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
  return writeFileAtomic(indexPath_, doc.dump(2) + "\n", 0600);
}

namespace {

/// The note for a value left in `backend`, a store not reachable now: where
/// it stays and how to remove it there.
std::string leftInUnreachableStore(const std::string& what, const std::string& name, const std::string& backend) {
  std::string how = backend == "secret-service"
                        ? "remove it there when it is (`" + SecretServiceBackend::clearCommand(name) + "`)"
                        : "remove it there";
  return fmt::format("{} of {} stays in the {} store (not reachable now); {}", what, name, backend, how);
}

}  // namespace

Result<SecretBackend*> SecretStore::backendOf(const SecretInfo& info) const {
  auto it = backends_.find(info.backend);
  if (it == backends_.end())
    return failWith(exit_code::kHostNotReady, "the secret {} is in the {} store, which is not reachable now{}",
                    info.name, info.backend,
                    info.backend == "secret-service"
                        ? " (no usable Secret Service on this session bus: run it where the keyring is unlocked, or "
                          "store it again here)"
                        : "");
  return it->second;
}

Result<> SecretStore::set(const std::string& name, const std::string& value, const std::string& source,
                          std::optional<int64_t> expiresAt, std::string& note) {
  note.clear();
  if (!isValidSecretName(name))
    return failWith(exit_code::kUsage,
                    "that is not a secret name: a letter, then letters, digits, '_', '.' or '-' "
                    "(at most 64)");
  if (value.empty()) return failWith(exit_code::kUsage, "the value of {} is empty", name);
  if (value.size() > kMaxSecretBytes)
    return failWith(exit_code::kUsage, "the value of {} has more than {} bytes, the most airlock keeps", name,
                    kMaxSecretBytes);
  if (auto ok = checkDirectoryChain(parentOf(indexPath_)); !ok) return ok;
  if (auto made = makeDirs(parentOf(indexPath_), 0700); !made) return made;
  auto lock = FileLock::acquire(indexPath_ + ".lock", "using the secret index", {});
  if (!lock) return std::unexpected(lock.error());
  auto index = readIndex();
  if (!index) return std::unexpected(index.error());
  if (auto stored = preferred_.store(name, value); !stored) return stored;
  if (auto old = index->find(name); old != index->end() && old->second.backend != preferred_.id()) {
    // The value moved: the old copy goes, or stays where it cannot be reached now.
    if (auto from = backendOf(old->second); !from)
      note = leftInUnreachableStore("the old value", name, old->second.backend);
    else if (auto erased = (*from)->erase(name); !erased)
      note = fmt::format("the old value of {} stays in the {} store: {}", name, old->second.backend,
                         erased.error().message);
  }
  (*index)[name] = SecretInfo{name, preferred_.id(), source, now(), expiresAt, std::nullopt};
  return writeIndex(*index);
}

Result<std::optional<std::string>> SecretStore::get(const std::string& name) {
  if (!pathExists(indexPath_)) return std::optional<std::string>();
  auto lock = FileLock::acquire(indexPath_ + ".lock", "using the secret index", {});
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
    return fail("the {} store lost the value of {}; set it again (airlock secret set {})", it->second.backend, name,
                name);
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

Result<bool> SecretStore::remove(const std::string& name, std::string& note) {
  note.clear();
  if (!pathExists(indexPath_)) return false;
  auto lock = FileLock::acquire(indexPath_ + ".lock", "using the secret index", {});
  if (!lock) return std::unexpected(lock.error());
  auto index = readIndex();
  if (!index) return std::unexpected(index.error());
  auto it = index->find(name);
  if (it == index->end()) return false;
  if (auto backend = backendOf(it->second); !backend)
    note = leftInUnreachableStore("the value", name, it->second.backend);
  else if (auto erased = (*backend)->erase(name); !erased)
    return std::unexpected(erased.error());
  index->erase(it);
  if (auto written = writeIndex(*index); !written) return std::unexpected(written.error());
  return true;
}

}  // namespace airlock::secrets
