#pragma once
// The guest's serial console on the host, bounded whatever the guest writes:
// QEMU serves the console on a unix socket, a drain thread copies it into a
// capped log file (the first bytes kept whole, then only the latest), and
// tails are read from the end of a file with bounded memory.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::vm {

/// How much of the console the host keeps. On disk the log is at most
/// headBytes + 2 * tailBytes plus a one-line marker.
struct ConsoleLimits {
  size_t headBytes = 256u << 10;  ///< the start of the log (boot messages), kept whole
  size_t tailBytes = 1u << 20;    ///< then at least this much of the latest output
};

/// Copies a console stream (QEMU's chardev socket) into `logPath` within
/// `limits`, on its own thread, until the stream ends or the drain is destroyed.
class ConsoleDrain {
 public:
  ConsoleDrain(Fd stream, Fd log, ConsoleLimits limits);
  ~ConsoleDrain();
  ConsoleDrain(const ConsoleDrain&) = delete;
  ConsoleDrain& operator=(const ConsoleDrain&) = delete;

  /// Opens (truncates) `logPath` and starts draining `stream`.
  static Result<std::unique_ptr<ConsoleDrain>> start(Fd stream, const std::string& logPath, ConsoleLimits limits);
  /// Bytes the guest wrote to the console so far.
  uint64_t received() const { return received_; }

 private:
  void loop();
  void append(std::string_view data);

  Fd stream_;
  Fd log_;
  ConsoleLimits limits_;
  size_t headLeft_;
  std::string tail_;  ///< what follows the head in the file (after the marker, once dropped_ > 0)
  uint64_t dropped_ = 0;
  std::atomic<uint64_t> received_ = 0;
  std::thread thread_;
};

/// The last `count` lines of the file at `path`, reading at most its last
/// `maxBytes`; a line longer than `maxLineBytes` is cut there (with "...").
/// A missing file gives no lines.
std::vector<std::string> tailLines(const std::string& path, size_t count, size_t maxBytes = 64u << 10,
                                   size_t maxLineBytes = 1024);

}  // namespace airlock::vm
