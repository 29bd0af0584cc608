#include "vm/qmp.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/fd.h"

namespace airlock::vm {
namespace {

/// Reads one JSON line (QMP replies are newline-terminated).
Result<std::string> readLine(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  char c;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(timeout.count()));
    if (r <= 0) return fail("QMP did not answer within {} ms", timeout.count());
    ssize_t n = read(fd, &c, 1);
    if (n <= 0) return fail("QMP connection closed");
    if (c == '\n') return line;
    if (line.size() > 65536) return fail("QMP reply too long");
    line.push_back(c);
  }
}

}  // namespace

Result<std::string> qmpExecute(const std::string& socketPath, const std::string& command,
                               std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof addr.sun_path) return fail("QMP socket path {} is too long", socketPath);
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  // The socket's directory belongs to QEMU's jail uid: pin the socket itself
  // (no symlink, a socket) and connect through the pinned inode, so a
  // compromised QEMU cannot point airlock at another socket.
  Fd pinned(::open(socketPath.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!pinned || ::fstat(pinned.get(), &st) != 0 || !S_ISSOCK(st.st_mode))
    return fail("QMP socket {} is missing or not a socket", socketPath);
  std::string viaFd = "/proc/self/fd/" + std::to_string(pinned.get());
  std::memcpy(addr.sun_path, viaFd.c_str(), viaFd.size() + 1);
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail("cannot connect to QMP at {}: {}", socketPath, errnoText(errno));
  if (auto greeting = readLine(fd.get(), timeout); !greeting) return greeting;
  if (!writeAll(fd.get(), "{\"execute\":\"qmp_capabilities\"}\n")) return fail("QMP write failed");
  if (auto ok = readLine(fd.get(), timeout); !ok) return ok;
  if (!writeAll(fd.get(), "{\"execute\":\"" + command + "\"}\n")) return fail("QMP write failed");
  return readLine(fd.get(), timeout);
}

}  // namespace airlock::vm
