#include "guest/ssh_agent_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vm/guest_contract.h"

namespace airlock::guest {
namespace {

constexpr uint32_t kMaxMessage = 256 * 1024;  // OpenSSH's AGENT_MAX_LEN
constexpr size_t kMaxClients = 16;
// The host answers within minutes (its agent and the user's confirmation
// have deadlines); a client waits at most this long, then gets a failure.
constexpr int kReplyTimeoutSeconds = 5 * 60;

uint32_t lengthOf(const std::string& buf) {
  return (uint32_t{static_cast<uint8_t>(buf[0])} << 24) | (uint32_t{static_cast<uint8_t>(buf[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(buf[2])} << 8) | uint32_t{static_cast<uint8_t>(buf[3])};
}

/// Bytes of the first whole message in `buf` (0: not yet; -1: a bad length).
long wholeMessage(const std::string& buf) {
  if (buf.size() < 4) return 0;
  const uint32_t length = lengthOf(buf);
  if (length == 0 || length > kMaxMessage) return -1;
  return buf.size() >= 4 + size_t{length} ? long(4 + length) : 0;
}

bool writeAllFd(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

struct Client {
  int fd;
  std::string in;
};

[[noreturn]] void relay(int listener, int port) {
  std::vector<Client> clients;
  std::string fromPort;
  int waiting = -1;  // the fd whose request is at the host; -2: its client left (or gave up)
  timespec sent{};
  const std::string failure("\0\0\0\1\5", 5);  // SSH_AGENT_FAILURE
  auto drop = [&](size_t i) {
    if (clients[i].fd == waiting) waiting = -2;
    close(clients[i].fd);
    clients.erase(clients.begin() + static_cast<long>(i));
  };
  for (;;) {
    // Send the next whole request when none is at the host.
    for (size_t i = 0; waiting == -1 && i < clients.size(); ++i) {
      long whole = wholeMessage(clients[i].in);
      if (whole <= 0) continue;
      if (!writeAllFd(port, clients[i].in.data(), static_cast<size_t>(whole))) _exit(1);
      clients[i].in.erase(0, static_cast<size_t>(whole));
      waiting = clients[i].fd;
      clock_gettime(CLOCK_MONOTONIC, &sent);
    }
    std::vector<pollfd> fds;
    fds.push_back({port, static_cast<short>(waiting != -1 ? POLLIN : 0), 0});
    fds.push_back({listener, static_cast<short>(clients.size() < kMaxClients ? POLLIN : 0), 0});
    for (const auto& c : clients) fds.push_back({c.fd, POLLIN, 0});
    int ready = poll(fds.data(), fds.size(), 1000);
    if (ready < 0 && errno != EINTR) _exit(1);
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (waiting >= 0 && now.tv_sec - sent.tv_sec > kReplyTimeoutSeconds) {
      // Its late reply, when it comes, is dropped: the stream stays in step.
      (void)!send(waiting, failure.data(), failure.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      waiting = -2;
    }
    if (ready <= 0) continue;
    ssize_t fromHost = 0;
    if (fds[0].revents & POLLIN) {
      char buf[65536];
      fromHost = read(port, buf, sizeof buf);
      if (fromHost > 0) fromPort.append(buf, static_cast<size_t>(fromHost));
      long whole = wholeMessage(fromPort);
      if (whole < 0 || fromPort.size() > 4 + kMaxMessage) _exit(1);  // the host would never do this
      if (whole > 0) {
        for (auto& c : clients)
          if (c.fd == waiting)
            (void)!send(c.fd, fromPort.data(), static_cast<size_t>(whole), MSG_NOSIGNAL | MSG_DONTWAIT);
        fromPort.erase(0, static_cast<size_t>(whole));
        waiting = -1;
      }
    }
    if (fromHost <= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      // The host end is gone: nobody will answer.
      for (auto& c : clients)
        if (c.fd == waiting) (void)!send(c.fd, failure.data(), failure.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      waiting = -1;
      fromPort.clear();
      usleep(100000);
    }
    if (fds[1].revents & POLLIN) {
      int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) clients.push_back({fd, {}});
    }
    for (size_t i = fds.size(); i-- > 2;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = read(clients[i - 2].fd, buf, sizeof buf);
      if (n <= 0) {
        drop(i - 2);
        continue;
      }
      clients[i - 2].in.append(buf, static_cast<size_t>(n));
      if (wholeMessage(clients[i - 2].in) < 0 || clients[i - 2].in.size() > 2 * (4 + size_t{kMaxMessage})) drop(i - 2);
    }
  }
}

}  // namespace

bool startSshAgentRelay(const std::string& portDevice, std::string& error) {
  const std::string socketPath = kSshAgentSocket;
  const std::string dir = socketPath.substr(0, socketPath.rfind('/'));
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socketPath.c_str(), sizeof addr.sun_path - 1);
  unlink(socketPath.c_str());
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(socketPath.c_str(), 0666) != 0 || listen(listener, 16) != 0) {
    error = "cannot serve " + socketPath + ": " + std::strerror(errno);
    if (listener >= 0) close(listener);
    return false;
  }
  int port = open(portDevice.c_str(), O_RDWR | O_CLOEXEC);
  if (port < 0) {
    error = "cannot open " + portDevice + ": " + std::strerror(errno);
    close(listener);
    return false;
  }
  pid_t pid = fork();
  if (pid < 0) {
    error = std::string("cannot fork the SSH agent relay: ") + std::strerror(errno);
    close(listener);
    close(port);
    return false;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    relay(listener, port);
  }
  close(listener);
  close(port);
  return true;
}

}  // namespace airlock::guest
