#include "common/fd.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace airlock {

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

ssize_t readFull(int fd, void* buf, size_t size) {
  size_t done = 0;
  auto* p = static_cast<char*>(buf);
  while (done < size) {
    ssize_t n = ::read(fd, p + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

Result<std::string> readFile(const std::string& path, size_t limit) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail("cannot read {}: {}", path, errnoText(errno));
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot read {}: {}", path, errnoText(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > limit) return fail("{} is larger than {} bytes", path, limit);
  }
  return out;
}

Result<> writeFileAtomic(const std::string& path, std::string_view data, unsigned mode) {
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  Fd fd;
  do {
    tmp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter.fetch_add(1));
    fd = Fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  } while (!fd && errno == EEXIST);
  if (!fd) return fail("cannot write {}: {}", tmp, errnoText(errno));
  if (!writeAll(fd.get(), data) || ::fsync(fd.get()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail("cannot write {}: {}", tmp, errnoText(e));
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail("cannot rename {} to {}: {}", tmp, path, errnoText(e));
  }
  return {};
}

}  // namespace airlock
