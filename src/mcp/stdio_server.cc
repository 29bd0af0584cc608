#include "mcp/stdio_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/exit_codes.h"
#include "common/subprocess.h"

namespace airlock::mcp {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

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
  server->stdout_ = Fd(out[0]);
  server->wake_[0] = Fd(wake[0]);
  server->wake_[1] = Fd(wake[1]);
  server->program_ = options.argv.front();
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
  server->reader_ = std::thread([s = server.get()] { s->readLoop(); });
  return server;
}

StdioServer::~StdioServer() {
  stop();
  if (reader_.joinable()) reader_.join();
}

void StdioServer::stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    if (reaped_) return;
    reaped_ = true;
    if (gone_.empty()) gone_ = "it was stopped";
    answered_.notify_all();
  }
  {
    std::lock_guard lock(writeMutex_);
    stdin_.reset();
  }
  if (pid_ > 0) {
    ::kill(-pid_, SIGTERM);
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

void StdioServer::readLoop() {
  std::string buffer;
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
    buffer.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1)
      onLine(buffer.substr(start, nl - start));
    buffer.erase(0, start);
    if (buffer.size() > maxMessageBytes_) {
      why = "it sent a message over the limit";
      ::kill(-pid_, SIGKILL);
      break;
    }
  }
  std::lock_guard lock(mutex_);
  if (gone_.empty()) gone_ = why;
  answered_.notify_all();
}

void StdioServer::onLine(const std::string& line) {
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
  if (!stdin_ || !writeAll(stdin_.get(), line)) return failWith(exit_code::kInternal, "the server is gone");
  return {};
}

Result<json> StdioServer::request(const std::string& method, const json& params, std::chrono::milliseconds timeout) {
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (!gone_.empty()) return failWith(exit_code::kInternal, "{} is gone: {}", program_, gone_);
    id = nextId_++;
    pending_[id];
  }
  json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  auto sent = send(message);
  std::unique_lock lock(mutex_);
  auto done = [&] { return pending_[id].has_value() || !gone_.empty(); };
  if (sent) answered_.wait_for(lock, timeout, done);
  std::optional<json> answer = std::move(pending_[id]);
  pending_.erase(id);
  if (answer) return std::move(*answer);
  if (!gone_.empty()) return failWith(exit_code::kInternal, "{} is gone: {}", program_, gone_);
  if (!sent) return failWith(exit_code::kInternal, "{} is gone: its input is closed", program_);
  return failWith(exit_code::kInternal, "{} did not answer {} within {} s", program_, method, timeout.count() / 1000);
}

Result<> StdioServer::notify(const std::string& method, const json& params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  return send(message);
}

}  // namespace airlock::mcp
