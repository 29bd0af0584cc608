#include "session/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "session/attach_frames.h"
#include "session/layout.h"
#include "session/session.h"

namespace airlock::session {
namespace {

/// sockaddr_un for `name` in the directory `dirFd`, through /proc/self/fd:
/// sun_path holds 108 bytes, a session directory's path may be longer.
Result<sockaddr_un> socketAddress(int dirFd, const std::string& name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = fmt::format("/proc/self/fd/{}/{}", dirFd, name);
  if (path.size() >= sizeof addr.sun_path) return fail("socket path {} is too long", path);
  path.copy(addr.sun_path, path.size());
  return addr;
}

/// A client's unsent output is capped: one that stops reading is dropped,
/// never the agent slowed down.
constexpr size_t kClientBacklog = size_t{4} << 20;

/// What the output handler (the sandbox's reader thread) shares with the loop.
struct OutputFanout {
  std::mutex mutex;
  Fd log;
  uint64_t logged = 0;
  std::map<int, std::string> outbox;  ///< per client fd: frames not yet sent
  std::set<int> overflowed;           ///< clients to drop
  Fd wake;                            ///< eventfd: the loop has output to send

  void add(std::string_view data) {
    std::lock_guard lock(mutex);
    if (log && logged < kOutputCap) {
      size_t n = std::min<uint64_t>(data.size(), kOutputCap - logged);
      if (writeAll(log.get(), data.substr(0, n))) logged += n;
    }
    for (auto& [fd, box] : outbox) {
      if (overflowed.count(fd)) continue;
      for (size_t at = 0; at < data.size(); at += kMaxFramePayload)
        box += encodeAttachFrame(AttachFrameType::kOutput, data.substr(at, kMaxFramePayload));
      if (box.size() > kClientBacklog) {
        overflowed.insert(fd);
        box.clear();
      }
    }
    uint64_t one = 1;
    (void)!::write(wake.get(), &one, sizeof one);
  }
};

/// Blocks the signals the supervisor handles, read from a signalfd.
class SignalScope {
 public:
  SignalScope() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
    pthread_sigmask(SIG_BLOCK, &mask, &saved_);
    fd_.reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~SignalScope() {
    fd_.reset();
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  int fd() const { return fd_.get(); }

 private:
  sigset_t saved_{};
  Fd fd_;
};

}  // namespace

Result<Fd> listenAttachSocket(const std::string& dir) {
  Fd dirFd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dirFd) return fail("cannot open {}: {}", dir, errnoText(errno));
  const std::string name = SessionLayout{dir}.attachSocket();
  auto addr = socketAddress(dirFd.get(), name);
  if (!addr) return std::unexpected(addr.error());
  ::unlinkat(dirFd.get(), name.c_str(), 0);
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock) return fail("cannot make a socket: {}", errnoText(errno));
  if (::bind(sock.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0)
    return fail("cannot bind the attach socket in {}: {}", dir, errnoText(errno));
  (void)::fchmodat(dirFd.get(), name.c_str(), 0600, 0);
  if (::listen(sock.get(), 8) != 0) return fail("cannot listen on the attach socket in {}: {}", dir, errnoText(errno));
  return sock;
}

Result<Fd> connectAttachSocket(const std::string& dir) {
  Fd dirFd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dirFd) return fail("cannot open {}: {}", dir, errnoText(errno));
  auto addr = socketAddress(dirFd.get(), SessionLayout{dir}.attachSocket());
  if (!addr) return std::unexpected(addr.error());
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return fail("cannot make a socket: {}", errnoText(errno));
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    if (errno == ENOENT || errno == ECONNREFUSED)
      return failWith(exit_code::kUsage, "session {} has no agent to attach to (it is not a running detached "
                      "session; `airlock ls` shows its state)", dir.substr(dir.rfind('/') + 1));
    return fail("cannot connect to the attach socket in {}: {}", dir, errnoText(errno));
  }
  return sock;
}

void DetachedUi::line(const std::string& text, bool always) {
  if (!started_) {
    if (always || !quiet_) std::fprintf(stderr, "airlock: %s\n", text.c_str());
    return;
  }
  if (!dir_.empty()) appendSessionLog(dir_, text);
}

void DetachedUi::progress(const std::string& text) { line(text, false); }
void DetachedUi::notice(const std::string& text) { line("note: " + text, false); }
void DetachedUi::warn(const std::string& text) { line("warning: " + text, true); }
void DetachedUi::say(const std::string& text) { line(text, true); }

void DetachedUi::reviewed(const workspace::GateOutcome& outcome, const std::string&) {
  if (!dir_.empty()) appendSessionLog(dir_, outcome.summary);
}

void DetachedUi::blockedEgress(const std::vector<std::string>& lines, const std::string& details) {
  if (lines.empty()) return;
  line("egress blocked during this session (details: " + details + "):", true);
  for (const auto& l : lines) line("  " + l, true);
}

Result<Attached> DetachedUi::attach(vm::Sandbox& sandbox, protocol::ExecRequest request, bool pty) {
  if (dir_.empty()) return failWith(exit_code::kInternal, "a detached session needs its directory before attach");
  request.pty = pty;
  if (pty && (request.rows == 0 || request.cols == 0)) {
    request.rows = 24;
    request.cols = 80;
  }
  auto fanout = std::make_shared<OutputFanout>();
  const std::string output = SessionLayout{dir_}.output();
  fanout->log.reset(::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fanout->log) return fail("cannot write {}: {}", output, errnoText(errno));
  fanout->wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  auto listener = listenAttachSocket(dir_);
  if (!listener) return std::unexpected(listener.error());
  SignalScope signals;
  vm::OutputHandlers handlers;
  handlers.onStdout = [fanout](std::string_view d) { fanout->add(d); };
  handlers.onStderr = [fanout](std::string_view d) { fanout->add(d); };
  auto cmd = sandbox.exec(request, handlers);
  if (!cmd) return std::unexpected(cmd.error());

  // Started: `run -d` prints the name and returns; stderr is let go.
  std::fprintf(stderr, "%s%s\n", kStartedMarker, name_.c_str());
  std::fflush(stderr);
  if (Fd null(::open("/dev/null", O_WRONLY | O_CLOEXEC)); null) ::dup2(null.get(), 2);
  started_ = true;

  Fd done(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  Result<protocol::ExitStatus> status = fail("not finished");
  std::atomic<bool> giveUp = false;
  std::thread waiter([&] {
    while (!giveUp) {
      auto r = (*cmd)->waitFor(std::chrono::milliseconds(100));
      if (!r) continue;
      status = std::move(*r);
      uint64_t one = 1;
      (void)!::write(done.get(), &one, sizeof one);
      return;
    }
  });

  struct Client {
    Fd fd;
    AttachFrameReader reader;
  };
  std::map<int, Client> clients;
  auto dropClient = [&](int fd) {
    {
      std::lock_guard lock(fanout->mutex);
      fanout->outbox.erase(fd);
      fanout->overflowed.erase(fd);
    }
    clients.erase(fd);
  };
  std::string input;  // keystrokes waiting for the guest's window
  std::optional<std::chrono::steady_clock::time_point> forceStopAt;
  bool finished = false;
  char buf[16384];
  for (;;) {
    std::vector<pollfd> fds = {{done.get(), POLLIN, 0},
                               {signals.fd(), POLLIN, 0},
                               {listener->get(), POLLIN, 0},
                               {fanout->wake.get(), POLLIN, 0}};
    {
      std::lock_guard lock(fanout->mutex);
      for (auto& [fd, c] : clients) {
        short events = input.empty() ? POLLIN : 0;
        if (!fanout->outbox[fd].empty()) events |= POLLOUT;
        fds.push_back({fd, events, 0});
      }
    }
    int timeout = forceStopAt || !input.empty() ? 50 : -1;
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      finished = true;
      break;
    }
    if (forceStopAt && std::chrono::steady_clock::now() > *forceStopAt) break;
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (::read(signals.fd(), &info, sizeof info) == sizeof info) {
        if (forceStopAt) {
          forceStopAt = std::chrono::steady_clock::now();  // asked twice: stop now
        } else {
          (void)(*cmd)->signal(SIGTERM);
          forceStopAt = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          appendSessionLog(dir_, "stop: sent SIGTERM to the command; the session ends in 10 s if it does not exit");
        }
      }
    }
    if (fds[2].revents) {
      while (true) {
        Fd c(::accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!c) break;
        int fd = c.get();
        {
          std::lock_guard lock(fanout->mutex);
          fanout->outbox[fd];
        }
        clients.emplace(fd, Client{std::move(c), {}});
      }
    }
    if (fds[3].revents) {
      uint64_t n;
      (void)!::read(fanout->wake.get(), &n, sizeof n);
    }
    std::vector<int> drop;
    {
      std::lock_guard lock(fanout->mutex);
      drop.assign(fanout->overflowed.begin(), fanout->overflowed.end());
    }
    for (size_t i = 4; i < fds.size(); ++i) {
      const int fd = fds[i].fd;
      if (!clients.count(fd)) continue;
      if (fds[i].revents & POLLOUT) {
        std::lock_guard lock(fanout->mutex);
        std::string& box = fanout->outbox[fd];
        ssize_t n = ::send(fd, box.data(), box.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) box.erase(0, static_cast<size_t>(n));
        else if (n < 0 && errno != EAGAIN && errno != EINTR) drop.push_back(fd);
      }
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) {
          if (n == 0 || (errno != EAGAIN && errno != EINTR)) drop.push_back(fd);
          continue;
        }
        Client& client = clients.at(fd);
        client.reader.feed(std::string_view(buf, static_cast<size_t>(n)));
        for (;;) {
          auto frame = client.reader.next();
          if (!frame) {
            drop.push_back(fd);
            break;
          }
          if (!*frame) break;
          if ((*frame)->type == AttachFrameType::kInput) {
            input += (*frame)->payload;
          } else if ((*frame)->type == AttachFrameType::kResize) {
            if (auto size = decodeResize((*frame)->payload); size && pty)
              (void)(*cmd)->resize(size->first, size->second);
          }
        }
      }
    }
    for (int fd : drop) dropClient(fd);
    if (!input.empty()) {
      auto sent = (*cmd)->writeStdinSome(input);
      if (!sent) input.clear();
      else input.erase(0, *sent);
    }
  }
  if (!finished) {
    (void)(*cmd)->signal(SIGKILL);
    giveUp = true;
  }
  waiter.join();
  // The attached clients learn the end; the socket goes with the command.
  const int code = finished && status ? status->shellCode() : 128 + SIGTERM;
  const std::string exitFrame = encodeAttachFrame(AttachFrameType::kExit, std::to_string(code));
  {
    std::lock_guard lock(fanout->mutex);
    for (auto& [fd, box] : fanout->outbox) {
      box += exitFrame;
      ::fcntl(fd, F_SETFL, 0);
      timeval limit{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
      (void)!::send(fd, box.data(), box.size(), MSG_NOSIGNAL);
    }
    fanout->outbox.clear();
  }
  clients.clear();
  ::unlink((dir_ + "/" + SessionLayout{dir_}.attachSocket()).c_str());
  if (!finished) return Attached{128 + SIGTERM, true};
  if (std::string err = (*cmd)->startError(); !err.empty()) appendSessionLog(dir_, "the command did not start: " + err);
  if (!status) return std::unexpected(status.error());
  return Attached{status->shellCode(), false};
}

}  // namespace airlock::session
