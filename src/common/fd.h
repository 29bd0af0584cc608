#pragma once
// Owning file descriptor (closes on destruction), and small I/O helpers.

#include <unistd.h>

#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace airlock {

/// Owns one file descriptor; -1 means none.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

/// Writes all of `data`, retrying on EINTR and short writes. Returns false
/// with errno set on failure.
bool writeAll(int fd, std::string_view data);

/// Reads exactly `size` bytes. Returns the count read (less at EOF), or -1 on error.
ssize_t readFull(int fd, void* buf, size_t size);

/// Reads a whole file (at most `limit` bytes) into a string.
Result<std::string> readFile(const std::string& path, size_t limit = 64 << 20);

/// Writes `data` to `path` atomically: a temp file of its own in the same
/// directory (created with O_EXCL, so concurrent writers never share one;
/// `mode` is masked by the umask as open(2) does), fsync, rename.
Result<> writeFileAtomic(const std::string& path, std::string_view data, unsigned mode = 0644);

}  // namespace airlock
