#pragma once
// The file store: one file per secret under a directory only the user can
// enter (0700), each file 0600 and replaced atomically. For hosts without a
// Secret Service on a session bus (servers, SSH sessions, CI).

#include "secrets/secret_backend.h"

namespace airlock::secrets {

/// Values as files `dir`/NAME (NAME checked by isValidSecretName before it
/// reaches here). The directory is made 0700 on the first store; a
/// directory or file readable by others is refused (it would show the value
/// to them), naming the chmod that fixes it.
class FileBackend final : public SecretBackend {
 public:
  explicit FileBackend(std::string dir) : dir_(std::move(dir)) {}
  std::string id() const override { return "file"; }
  std::string describe() const override { return dir_; }
  Result<> store(const std::string& name, const std::string& value) override;
  Result<std::optional<std::string>> lookup(const std::string& name) override;
  Result<> erase(const std::string& name) override;

 private:
  Result<> checkPrivate(const std::string& path, bool directory) const;
  std::string dir_;
};

}  // namespace airlock::secrets
