#include "mcp/stdio_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/subprocess.h"

namespace airlock::mcp {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

/// The longest a message may take to go into the server's input.
constexpr std::chrono::seconds kSendTimeout{30};

}  // namespace

Result<std::unique_ptr<StdioServer>> StdioServer::start(const StdioServerOptions& options) {
  if (options.argv.empty() || !options.argv.front().starts_with('/'))
    return failWith(exit_code::kInternal, "an MCP server's program must be an absolute path");
  int in[2], out[2], wake[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(wake, O_CLOEXEC))
    return failWith(exit_code::kInternal, "cannot create pipes for an MCP server: {}", errnoText(errno));
  std::unique_ptr<StdioServer> server(new StdioServer());
  Fd childIn(in[0]), childOut(out[1]);
  server->stdin_ = Fd(in[1]);
  // Written with a deadline (send()): a server that stops reading must not
  // hold a proxy thread, or stop(), forever.
  fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  server->stdout_ = Fd(out[0]);
  server->wake_[0] = Fd(wake[0]);
  server->wake_[1] = Fd(wake[1]);
  server->maxMessageBytes_ = options.maxMessageBytes;
  SpawnOptions spawn;
  spawn.stderrPath = options.stderrPath;
  spawn.environment = options.environment;
  const int inFd = childIn.get(), outFd = childOut.get();
  const std::string cwd = options.cwd;
  spawn.beforeExec = [inFd, outFd, cwd]() -> int {
    if (dup2(inFd, 0) < 0 || dup2(outFd, 1) < 0) return errno;
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) return errno;
    return 0;
  };
  auto pid = spawnTied(options.argv, spawn);
  if (!pid) return failWith(exit_code::kUsage, "{}", pid.error().message);
  server->pid_ = *pid;
  // SIGPIPE is ignored by airlock (a write to a server that exited fails with EPIPE).
  return server;
}

StdioServer::~StdioServer() {
  stop();
  if (reader_.joinable()) reader_.join();
}

void StdioServer::stop() {
  constexpr std::chrono::milliseconds grace{2000};
  stopping_ = true;  // senders waiting for the server to read give up at once
  {
    std::lock_guard lock(mutex_);
    if (reaped_) return;
    reaped_ = true;
    if (gone_.empty()) gone_ = "it was stopped";
    answered_.notify_all();
  }
  // Signalled first: a sender blocked on a full pipe (holding writeMutex_)
  // gets EPIPE once the server is gone.
  if (pid_ > 0) ::kill(-pid_, SIGTERM);
  {
    std::lock_guard lock(writeMutex_);
    stdin_.reset();
  }
  if (pid_ > 0) {
    const auto deadline = Clock::now() + grace;
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (done == 0) {
      ::kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    } else {
      ::kill(-pid_, SIGKILL);  // what it left behind in its group
    }
  }
  if (wake_[1]) (void)!::write(wake_[1].get(), "x", 1);
}

bool StdioServer::take(const char* data, size_t size) {
  buffer_.append(data, size);
  size_t start = 0;
  for (size_t nl; (nl = buffer_.find('\n', start)) != std::string::npos; start = nl + 1)
    onLine(buffer_.substr(start, nl - start));
  buffer_.erase(0, start);
  if (buffer_.size() <= maxMessageBytes_) return true;
  std::lock_guard lock(mutex_);
  if (!reaped_) ::kill(-pid_, SIGKILL);  // once reaped, the group id may be another's
  return false;
}

void StdioServer::readLoop() {
  char chunk[65536];
  std::string why = "it exited";
  for (;;) {
    pollfd fds[2] = {{stdout_.get(), POLLIN, 0}, {wake_[0].get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      why = "cannot read from it: " + errnoText(errno);
      break;
    }
    if (fds[1].revents) break;
    const ssize_t n = ::read(stdout_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (!take(chunk, static_cast<size_t>(n))) {
      why = "it sent a message over the limit";
      break;
    }
  }
  std::lock_guard lock(mutex_);
  if (gone_.empty()) gone_ = why;
  answered_.notify_all();
}

void StdioServer::onLine(const std::string& line) {
  if (jsonDepth(line) > kMaxMessageDepth) {  // copying such a value would overflow the stack
    std::lock_guard lock(mutex_);
    if (gone_.empty()) gone_ = fmt::format("it sent a message nested deeper than {} levels", kMaxMessageDepth);
    if (!reaped_) ::kill(-pid_, SIGKILL);
    answered_.notify_all();
    return;
  }
  json message = json::parse(line, nullptr, false);
  if (!message.is_object()) return;  // not a message (a server's stray output)
  const bool hasMethod = message.contains("method");
  if (message.contains("id") && !hasMethod) {
    const json& id = message["id"];
    if (!id.is_number_integer()) return;
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id.get<int64_t>());
    if (it == pending_.end() || it->second) return;
    it->second = std::move(message);
    answered_.notify_all();
    return;
  }
  if (hasMethod && message.contains("id")) {
    (void)send({{"jsonrpc", "2.0"},
                {"id", message["id"]},
                {"error", {{"code", -32601}, {"message", "not offered by airlock's MCP proxy"}}}});
  }
  // Notifications (progress, logging, list changes) are not passed on.
}

Result<> StdioServer::send(const json& message) {
  std::string line;
  try {
    line = message.dump() + "\n";
  } catch (const json::exception& e) {
    return failWith(exit_code::kInternal, "cannot encode a message: {}", e.what());
  }
  std::lock_guard lock(writeMutex_);
  const auto deadline = Clock::now() + kSendTimeout;
  std::string_view left = line;
  while (!left.empty()) {
    if (!stdin_) return failWith(exit_code::kInternal, "the server is gone");
    const ssize_t n = ::write(stdin_.get(), left.data(), left.size());
    if (n > 0) {
      left.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return failWith(exit_code::kInternal, "the server is gone: {}", errnoText(errno));
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd fd = {stdin_.get(), POLLOUT, 0};
    if (stopping_) return failWith(exit_code::kInternal, "the server is gone: it was stopped");
    if (wait <= 0 || ::poll(&fd, 1, static_cast<int>(std::min<int64_t>(wait, 100))) < 0) {
      if (wait > 0 && errno == EINTR) continue;
      return failWith(exit_code::kInternal, "the server does not read its input");
    }
  }
  return {};
}

Result<int64_t> StdioServer::begin(const std::string& method, const json& params) {
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (!gone_.empty()) return failWith(exit_code::kInternal, "the server is gone: {}", gone_);
    id = nextId_++;
    pending_[id];
  }
  json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  if (auto sent = send(message); !sent) {
    std::lock_guard lock(mutex_);
    pending_.erase(id);
    return failWith(exit_code::kInternal, "the server is gone: its input is closed");
  }
  return id;
}

Result<json> StdioServer::finish(int64_t id, const std::string& method, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  answered_.wait_for(lock, timeout, [&] { return pending_[id].has_value() || !gone_.empty(); });
  std::optional<json> answer = std::move(pending_[id]);
  pending_.erase(id);
  if (answer) return std::move(*answer);
  if (!gone_.empty()) return failWith(exit_code::kInternal, "the server is gone: {}", gone_);
  return failWith(exit_code::kInternal, "the server did not answer {} within {} s", method, timeout.count() / 1000);
}

Result<json> StdioServer::request(const std::string& method, const json& params, std::chrono::milliseconds timeout) {
  std::call_once(readerStarted_, [this] { reader_ = std::thread([this] { readLoop(); }); });
  auto id = begin(method, params);
  if (!id) return std::unexpected(id.error());
  return finish(*id, method, timeout);
}

Result<json> StdioServer::initialize(const json& params, std::chrono::milliseconds timeout) {
  const std::string method = "initialize";
  auto id = begin(method, params);
  if (!id) return std::unexpected(id.error());
  const auto deadline = Clock::now() + timeout;
  char chunk[65536];
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (pending_[*id] || !gone_.empty()) break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd fd = {stdout_.get(), POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    const ssize_t n = ::read(stdout_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !take(chunk, static_cast<size_t>(n))) {
      std::lock_guard lock(mutex_);
      if (gone_.empty()) gone_ = n <= 0 ? "it exited" : "it sent a message over the limit";
      break;
    }
  }
  return finish(*id, method, std::chrono::milliseconds(0));
}

Result<> StdioServer::notify(const std::string& method, const json& params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  return send(message);
}

}  // namespace airlock::mcp
