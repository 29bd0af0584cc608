#pragma once
// A stdio MCP server on the host (issue 20, `host: true`), which airlock's
// MCP proxy (mcp/host_proxy.h) is the only client of.
//
// Spec: Model Context Protocol 2025-06-18, "Transports", stdio: the client
// starts the server as a subprocess; JSON-RPC messages go one per line
// (newline-delimited, no embedded newlines) on its stdin and stdout; its
// stderr is a log. Requests the server sends the client (sampling, roots,
// elicitation) are answered "method not found": the proxy offers none of
// those capabilities.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fd.h"
#include "mcp/upstream.h"

namespace airlock::mcp {

/// How to start a server.
struct StdioServerOptions {
  std::vector<std::string> argv;               ///< argv[0] is an absolute path
  std::vector<std::string> environment;        ///< its whole environment, "NAME=value"
  std::string cwd;                             ///< its working directory ("" = airlock's)
  std::string stderrPath;                      ///< appended to; "" = /dev/null
  size_t maxMessageBytes = 16u * 1024 * 1024;  ///< a longer line ends the server
};

class StdioServer : public Upstream {
 public:
  /// Starts the server: in its own process group, killed if airlock dies
  /// (common/subprocess.h spawnTied: call from the main thread). Starts no
  /// thread (a run creates its jail's user namespace later, which
  /// unshare(2) refuses to a multi-threaded process): the reader thread
  /// starts with the first request(). Errors: kUsage naming the program
  /// (not found, not executable).
  static Result<std::unique_ptr<StdioServer>> start(const StdioServerOptions& options);
  /// stop(), then waits for the reader thread.
  ~StdioServer() override;
  StdioServer(const StdioServer&) = delete;
  StdioServer& operator=(const StdioServer&) = delete;

  /// Sends request `method` with `params` (an object, or null for none)
  /// under an id of the proxy's own and waits at most `timeout` for the
  /// answer: the server's response object, with "result" or "error".
  /// Errors: the server exited or was stopped, sent a line over the limit,
  /// or did not answer in time. Thread-safe.
  Result<nlohmann::json> request(const std::string& method, const nlohmann::json& params,
                                 std::chrono::milliseconds timeout) override;
  /// `initialize` as request(), but read on the calling thread; only before
  /// the first request().
  Result<nlohmann::json> initialize(const nlohmann::json& params, std::chrono::milliseconds timeout) override;
  /// Sends notification `method`. Thread-safe.
  Result<> notify(const std::string& method, const nlohmann::json& params) override;

  /// Ends the server: its stdin closed, SIGTERM to its process group, then
  /// SIGKILL 2 s later; reaped. Waiting requests fail at once.
  /// Idempotent, thread-safe.
  void stop() override;
  pid_t pid() const override { return pid_; }

 private:
  StdioServer() = default;
  void readLoop();
  /// Appends `data` to buffer_ and handles each whole line; false when the
  /// unfinished line is over the limit (the server is killed).
  bool take(const char* data, size_t size);
  void onLine(const std::string& line);
  /// Registers a request and sends it; its id.
  Result<int64_t> begin(const std::string& method, const nlohmann::json& params);
  /// The answer to `id` once there (or why there is none), unregistered.
  Result<nlohmann::json> finish(int64_t id, const std::string& method, std::chrono::milliseconds timeout);
  Result<> send(const nlohmann::json& message);

  pid_t pid_ = -1;
  size_t maxMessageBytes_ = 0;
  Fd stdin_, stdout_, wake_[2];
  std::string buffer_;  ///< the unfinished line (the reader's, or requestInline's before it)
  std::once_flag readerStarted_;
  std::mutex writeMutex_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;  // guards what follows
  std::condition_variable answered_;
  std::map<int64_t, std::optional<nlohmann::json>> pending_;
  int64_t nextId_ = 1;
  std::string gone_;  ///< why the server is gone ("" while it runs)
  bool reaped_ = false;
  std::thread reader_;
};

}  // namespace airlock::mcp
