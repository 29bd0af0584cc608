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
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/thread_signals.h"
#include "common/visible_text.h"
#include "session/attach_frames.h"
#include "session/command_waiter.h"
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
  std::set<int> attached;             ///< clients of `airlock attach` (kAttach): the agent's output
  std::set<int> overflowed;           ///< clients to drop
  Fd wake;                            ///< eventfd: the loop has output to send

  /// The agent's output: into the log, and to every attached client.
  void add(std::string_view data) {
    std::lock_guard lock(mutex);
    if (log && logged < kOutputCap) {
      size_t n = std::min<uint64_t>(data.size(), kOutputCap - logged);
      if (writeAll(log.get(), data.substr(0, n))) logged += n;
    }
    for (auto& [fd, box] : outbox)
      if (attached.count(fd)) queue(fd, box, AttachFrameType::kOutput, data);
    notify();
  }
  /// An exec's output, to its client only.
  void send(int fd, AttachFrameType type, std::string_view data) {
    std::lock_guard lock(mutex);
    if (auto it = outbox.find(fd); it != outbox.end()) queue(fd, it->second, type, data);
    notify();
  }

  /// Wakes the loop.
  void notify() {
    uint64_t one = 1;
    (void)!::write(wake.get(), &one, sizeof one);
  }
 private:
  void queue(int fd, std::string& box, AttachFrameType type, std::string_view data) {
    if (overflowed.count(fd)) return;
    for (size_t at = 0; at < data.size(); at += kMaxFramePayload)
      box += encodeAttachFrame(type, data.substr(at, kMaxFramePayload));
    if (box.size() > kClientBacklog) {
      overflowed.insert(fd);
      box.clear();
    }
  }
};

/// A client of the attach socket. Its first frame says what it is: kAttach
/// (`airlock attach`: the agent's output, its keys go to the agent), kExec
/// (`airlock exec` with its own command) or kDiff (`airlock diff`). Until
/// then it gets nothing and sends nothing anywhere.
struct Client {
  Fd fd;
  uint64_t serial = 0;                ///< unique in this supervisor (an fd number is reused)
  AttachFrameReader reader;
  bool attached = false;              ///< an `airlock attach`
  std::shared_ptr<vm::Command> exec;  ///< its command, once started
  std::string input;                  ///< keys for `exec` waiting for window credit
  bool closeInput = false;            ///< kCloseInput came: close exec's stdin once `input` is sent
  bool diff = false;                  ///< an `airlock diff`: waits for a LiveExport
  std::unique_ptr<CommandWaiter> waiter;  ///< `exec`'s end, polled by the loop

  Client(Fd f, uint64_t n) : fd(std::move(f)), serial(n) {}
  Client(Client&&) = default;
  ~Client() {
    if (waiter && !waiter->done()) (void)exec->signal(SIGKILL);  // its client is gone
  }
};

/// An export of the changes so far for `airlock diff`, on a thread of its
/// own (it takes as long as the change set is big; the loop goes on).
struct LiveExport {
  int client = -1;            ///< the fd of the `airlock diff` waiting for it
  uint64_t clientSerial = 0;  ///< and its serial (Client::serial)
  std::string name;   ///< the change set's file name in the session directory
  std::thread thread;
  std::atomic<bool> done{false};
  Result<uint64_t> result = uint64_t{0};  ///< written before done
};

/// `argv` as one line for the session log, each word made visible.
std::string visibleArgv(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + visibleText(a);
  return line;
}

/// Sends `box` (a client's last frames) to `fd`, blocking at most 1 s.
void sendLast(int fd, std::string box) {
  ::fcntl(fd, F_SETFL, 0);
  timeval limit{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  (void)!::send(fd, box.data(), box.size(), MSG_NOSIGNAL);
}

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

Result<Fd> connectAttachSocket(const std::string& dir, const std::string& name) {
  Fd dirFd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dirFd) return fail("cannot open {}: {}", dir, errnoText(errno));
  auto addr = socketAddress(dirFd.get(), SessionLayout{dir}.attachSocket());
  if (!addr) return std::unexpected(addr.error());
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return fail("cannot make a socket: {}", errnoText(errno));
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    if (errno == ENOENT || errno == ECONNREFUSED)
      return failWith(exit_code::kUsage, "session {} is not running detached: only a running `run -d` session can "
                      "be attached to, run commands or show its changes so far (`airlock ls` shows its state)", name);
    return fail("cannot connect to the attach socket in {}: {}", dir, errnoText(errno));
  }
  return sock;
}

DetachedUi::DetachedUi(bool quiet) : quiet_(quiet) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signals_.reset(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
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
  struct RemoveOnReturn {  // the socket goes with the command, however this ends
    std::string path;
    ~RemoveOnReturn() { ::unlink(path.c_str()); }
  } socketFile{dir_ + "/" + SessionLayout{dir_}.attachSocket()};
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

  CommandWaiter agent(*cmd);
  std::map<int, Client> clients;
  auto dropClient = [&](int fd) {
    {
      std::lock_guard lock(fanout->mutex);
      fanout->outbox.erase(fd);
      fanout->overflowed.erase(fd);
      fanout->attached.erase(fd);
    }
    clients.erase(fd);
  };

  // `airlock exec`: a command of its own, as the agent's user with the
  // agent's environment, in the agent's working directory.
  auto startExec = [&](int fd, Client& client, const ExecStart& start) -> bool {
    protocol::ExecRequest req = request;
    req.argv = start.argv;
    req.pty = start.tty;
    req.rows = start.rows;
    req.cols = start.cols;
    vm::OutputHandlers h;
    std::weak_ptr<OutputFanout> weak = fanout;
    h.onStdout = [weak, fd](std::string_view d) {
      if (auto f = weak.lock()) f->send(fd, AttachFrameType::kOutput, d);
    };
    h.onStderr = [weak, fd](std::string_view d) {
      if (auto f = weak.lock()) f->send(fd, AttachFrameType::kStderr, d);
    };
    auto started = sandbox.exec(req, h);
    if (!started) {
      fanout->send(fd, AttachFrameType::kStderr, "airlock: " + started.error().message + "\n");
      fanout->send(fd, AttachFrameType::kExit, "126");
      return false;
    }
    client.exec = *started;
    client.waiter = std::make_unique<CommandWaiter>(client.exec);
    appendSessionLog(dir_, "exec: " + visibleArgv(start.argv));
    return true;
  };
  // `airlock diff`: one export at a time, in the order asked.
  std::deque<std::pair<int, uint64_t>> diffQueue;  // fd and serial of each client waiting
  std::unique_ptr<LiveExport> live;
  // The client `fd` when it is still the one with `serial`.
  auto stillThere = [&](int fd, uint64_t serial) {
    auto it = clients.find(fd);
    return it != clients.end() && it->second.serial == serial;
  };
  auto startExport = [&] {
    while (!live && !diffQueue.empty()) {
      const auto [fd, serial] = diffQueue.front();
      diffQueue.pop_front();
      if (!stillThere(fd, serial)) continue;
      std::string path = dir_ + "/diff-XXXXXX.tar";
      Fd file(::mkstemps(path.data(), 4));
      if (!file) {
        sendLast(fd, encodeAttachFrame(AttachFrameType::kStderr,
                                       fmt::format("airlock: cannot create a file in {}: {}\n", dir_,
                                                   errnoText(errno))) +
                         encodeAttachFrame(AttachFrameType::kExit, std::to_string(exit_code::kInternal)));
        dropClient(fd);
        continue;
      }
      live = std::make_unique<LiveExport>();
      live->client = fd;
      live->clientSerial = serial;
      live->name = path.substr(dir_.size() + 1);
      live->thread = std::thread([&sandbox, l = live.get(), path, weak = std::weak_ptr<OutputFanout>(fanout)] {
        blockSignalsInThisThread();
        vm::ExportLimits limits;
        limits.live = true;  // a failed diff never ends the session
        l->result = sandbox.exportWorkspace(path, limits);
        l->done = true;
        if (auto f = weak.lock()) f->notify();
      });
    }
  };
  // The export's end: its client gets the file's name (or why not), a
  // client that left gets nothing and the file goes.
  auto finishExport = [&] {
    live->thread.join();
    std::unique_ptr<LiveExport> ended = std::move(live);
    const std::string path = dir_ + "/" + ended->name;
    if (!ended->result) ::unlink(path.c_str());
    appendSessionLog(dir_, ended->result ? fmt::format("diff: the changes so far exported ({} bytes)", *ended->result)
                                         : "diff: the export failed: " + ended->result.error().message);
    if (!stillThere(ended->client, ended->clientSerial)) {
      ::unlink(path.c_str());
      return;
    }
    std::string box;
    {
      std::lock_guard lock(fanout->mutex);
      box = std::move(fanout->outbox[ended->client]);
    }
    if (ended->result)
      box += encodeAttachFrame(AttachFrameType::kOutput, ended->name) + encodeAttachFrame(AttachFrameType::kExit, "0");
    else
      box += encodeAttachFrame(AttachFrameType::kStderr, "airlock: " + ended->result.error().message + "\n") +
             encodeAttachFrame(AttachFrameType::kExit, std::to_string(ended->result.error().code));
    sendLast(ended->client, box);
    dropClient(ended->client);
  };
  std::string input;  // keystrokes waiting for the guest's window
  uint64_t clientSerials = 0;
  std::optional<std::chrono::steady_clock::time_point> forceStopAt;
  bool finished = false;
  char buf[16384];
  for (;;) {
    std::vector<pollfd> fds = {{agent.fd(), POLLIN, 0},
                               {signals_.get(), POLLIN, 0},
                               {listener->get(), POLLIN, 0},
                               {fanout->wake.get(), POLLIN, 0}};
    bool inputWaiting = !input.empty();
    {
      std::lock_guard lock(fanout->mutex);
      for (auto& [fd, c] : clients) {
        const bool waiting = c.exec ? !c.input.empty() : !input.empty();
        inputWaiting = inputWaiting || waiting;
        short events = waiting ? 0 : POLLIN;
        if (!fanout->outbox[fd].empty()) events |= POLLOUT;
        fds.push_back({fd, events, 0});
        if (c.waiter) fds.push_back({c.waiter->fd(), POLLIN, 0});  // wakes the loop when the exec ends
      }
    }
    int timeout = forceStopAt || inputWaiting ? 50 : -1;
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
    if (fds[0].revents) {
      finished = true;
      break;
    }
    if (forceStopAt && std::chrono::steady_clock::now() > *forceStopAt) break;
    if (fds[1].revents) {
      signalfd_siginfo info;
      while (::read(signals_.get(), &info, sizeof info) == sizeof info) {
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
        clients.emplace(fd, Client(std::move(c), ++clientSerials));
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
      auto it = clients.find(fd);
      if (it == clients.end()) continue;
      Client& client = it->second;
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
        client.reader.feed(std::string_view(buf, static_cast<size_t>(n)));
        for (;;) {
          auto frame = client.reader.next();
          if (!frame) {
            drop.push_back(fd);
            break;
          }
          if (!*frame) break;
          const AttachFrame& f = **frame;
          const bool first = !client.attached && !client.exec && !client.diff;
          if (first && f.type == AttachFrameType::kAttach) {
            client.attached = true;
            std::lock_guard lock(fanout->mutex);
            fanout->attached.insert(fd);
          } else if (first && f.type == AttachFrameType::kDiff) {
            client.diff = true;
            if (forceStopAt) {
              fanout->send(fd, AttachFrameType::kStderr, "airlock: the session is stopping; `airlock diff` shows its "
                                                         "changes once it has ended\n");
              fanout->send(fd, AttachFrameType::kExit, std::to_string(exit_code::kBusy));
            } else {
              diffQueue.push_back({fd, client.serial});
            }
          } else if (first && f.type == AttachFrameType::kExec) {
            auto start = decodeExecStart(f.payload);
            if (!start || !startExec(fd, client, *start)) {
              if (!start) fanout->send(fd, AttachFrameType::kExit, "64");
            }
          } else if (f.type == AttachFrameType::kInput) {
            if (client.exec) client.input += f.payload;
            else if (client.attached) input += f.payload;
          } else if (f.type == AttachFrameType::kCloseInput) {
            client.closeInput = true;
          } else if (f.type == AttachFrameType::kResize) {
            auto size = decodeResize(f.payload);
            if (size && client.exec) (void)client.exec->resize(size->first, size->second);
            else if (size && client.attached && pty) (void)(*cmd)->resize(size->first, size->second);
          }
        }
      }
    }
    // Exec clients: their keys, the end of their input, their command's end.
    for (auto& [fd, client] : clients) {
      if (!client.exec) continue;
      if (!client.input.empty()) {
        auto sent = client.exec->writeStdinSome(client.input);
        if (!sent) client.input.clear();
        else client.input.erase(0, *sent);
      }
      if (client.closeInput && client.input.empty()) {
        client.closeInput = false;
        (void)client.exec->closeStdin();
      }
      if (client.waiter->done()) {
        const auto& status = client.waiter->status();
        int code = status ? status->shellCode() : 255;
        std::string box;
        {
          std::lock_guard lock(fanout->mutex);
          box = std::move(fanout->outbox[fd]);
          fanout->outbox[fd].clear();
        }
        sendLast(fd, box + encodeAttachFrame(AttachFrameType::kExit, std::to_string(code)));
        drop.push_back(fd);
      }
    }
    for (int fd : drop) dropClient(fd);
    if (live && live->done) finishExport();
    startExport();
    if (!input.empty()) {
      auto sent = (*cmd)->writeStdinSome(input);
      if (!sent) input.clear();
      else input.erase(0, *sent);
    }
  }
  if (!finished) (void)(*cmd)->signal(SIGKILL);
  if (live) finishExport();  // within the export's own deadlines
  for (const auto& [fd, serial] : diffQueue)
    if (stillThere(fd, serial))
      sendLast(fd, encodeAttachFrame(AttachFrameType::kStderr, "airlock: the session ended before its diff was "
                                                               "exported; `airlock diff` shows its changes now\n") +
                       encodeAttachFrame(AttachFrameType::kExit, std::to_string(exit_code::kBusy)));
  // The attached clients learn the end; the socket goes with the command.
  const Result<protocol::ExitStatus>& status = agent.status();  // written before agent.fd() became readable
  const int code = finished && status ? status->shellCode() : 128 + SIGTERM;
  const std::string exitFrame = encodeAttachFrame(AttachFrameType::kExit, std::to_string(code));
  {
    std::lock_guard lock(fanout->mutex);
    for (auto& [fd, box] : fanout->outbox)
      if (fanout->attached.count(fd)) sendLast(fd, box + exitFrame);
    fanout->outbox.clear();
  }
  clients.clear();  // an exec still running ends with the session
  if (!finished) return Attached{128 + SIGTERM, true};
  if (std::string err = (*cmd)->startError(); !err.empty()) {
    appendSessionLog(dir_, "the command did not start: " + err);
    fanout->add("airlock: the command did not start: " + err + "\n");  // for `airlock logs`
  }
  if (!status) return std::unexpected(status.error());
  return Attached{status->shellCode(), false};
}

}  // namespace airlock::session
