#pragma once
// The file store: one file per secret under a directory only the user can
// enter (0700), each file 0600 and replaced atomically. For hosts without a
// usable Secret Service (servers, SSH sessions, CI).

#include "secrets/secret_backend.h"

namespace airlock::secrets {

/// Refuses a directory others could swap or plant files in: `dir` and each
/// of its ancestors must be a real directory (no symlink) owned by the
/// calling user or by root, and none may be writable by others unless it
/// is sticky (/tmp); the group of a user's own directory may write to it
/// when it is the user's private group (named as the user, no other
/// members). Missing trailing components are fine
/// (they will be made by the user). Inside airlock's own user namespace
/// (where the user is root and the host's root is not mapped), root's
/// directories show the kernel's overflow uid and count as root's: the
/// store is always read once before airlock enters it, with real owners.
/// Errors name the offending directory.
Result<> checkDirectoryChain(const std::string& dir);

/// Values as files `dir`/NAME (NAME checked by isValidSecretName). The
/// directory is made 0700 on the first store; a store whose directory or
/// file others can read, or whose directory chain others could change
/// (checkDirectoryChain), is refused, naming the fix. Temporary files of
/// writes that were killed are removed by the next store or erase.
class FileBackend final : public SecretBackend {
 public:
  explicit FileBackend(std::string dir) : dir_(std::move(dir)) {}
  std::string id() const override { return "file"; }
  std::string describe() const override { return dir_; }
  Result<> store(const std::string& name, const std::string& value) override;
  Result<std::optional<std::string>> lookup(const std::string& name) override;
  Result<> erase(const std::string& name) override;
  /// Checks the whole store as lookup() would (the directory chain, the
  /// directory and every value file); the first problem found, with its fix.
  Result<> audit() const;

 private:
  Result<> checkPrivate(const std::string& path, bool directory) const;
  void removeStaleTemporaries() const;
  std::string dir_;
};

}  // namespace airlock::secrets
