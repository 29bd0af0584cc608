#pragma once
// The control protocol between the host (airlock) and the guest (airlock-init),
// carried over one virtio-serial port ("airlock.control") bound to a host unix
// socket. Shared by host and guest; depends on the C++ standard library only.
//
// Framing: every frame is a 12-byte header followed by `length` payload bytes.
//   offset 0  u8   version   (kVersion)
//   offset 1  u8   type      (FrameType)
//   offset 2  u16  flags     (must be 0)
//   offset 4  u32  channel   (command id; 0 = the VM itself)
//   offset 8  u32  length    (payload bytes, <= kMaxPayload)
// All integers are little-endian. Strings in payloads are u32 length + bytes.
// Either side treats the other as hostile: oversized, truncated, unknown or
// malformed frames are errors, and a decoder buffers at most one frame.

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::protocol {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderSize = 12;
/// Largest payload of any frame (1 MiB): bounds what a peer can make us buffer.
inline constexpr uint32_t kMaxPayload = 1u << 20;
/// Data frames (stdin/stdout/stderr) carry at most this many bytes (32 KiB).
inline constexpr size_t kMaxChunk = 32u << 10;
/// Bytes of stdin the host may send ahead of the guest's acknowledgements.
inline constexpr uint32_t kStdinWindow = 256u << 10;
/// Name of the virtio-serial port the guest looks for.
inline constexpr const char* kPortName = "airlock.control";
/// Most argv or env entries in one exec request.
inline constexpr uint32_t kMaxListEntries = 4096;

enum class FrameType : uint8_t {
  kHello = 1,     ///< guest -> host: u32 version, string guest description
  kExec = 2,      ///< host -> guest: ExecRequest on a new channel
  kStdin = 3,     ///< host -> guest: bytes; empty payload = end of input
  kStdout = 4,    ///< guest -> host: bytes; empty payload = end of output
  kStderr = 5,    ///< guest -> host: bytes; empty payload = end of output
  kResize = 6,    ///< host -> guest: u16 rows, u16 cols (pty only)
  kSignal = 7,    ///< host -> guest: u32 signal number for the command
  kExit = 8,      ///< guest -> host: ExitStatus; the channel is done
  kError = 9,     ///< guest -> host: string; the command could not start
  kStdinAck = 10, ///< guest -> host: u32 stdin bytes delivered (returns window credit)
  kShutdown = 11, ///< host -> guest: stop everything and power off
  kExport = 12,   ///< host -> guest: stream the /workspace overlay's upper layer as
                  ///< an OCI layer tar in kStdout frames on this channel, then kExit
};

/// True for the values of FrameType above.
bool isKnownType(uint8_t type);

/// Human-readable name of a frame type ("exec", "stdout", ...).
const char* typeName(FrameType type);

struct Frame {
  FrameType type{};
  uint32_t channel = 0;
  std::string payload;
};

/// One command to run in the guest.
struct ExecRequest {
  std::vector<std::string> argv;  ///< argv[0] is looked up on the env's PATH
  std::vector<std::string> env;   ///< "NAME=value" entries, exactly what the command gets
  std::string cwd = "/";
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool pty = false;               ///< true: one pty for stdin/stdout/stderr
  uint16_t rows = 24;             ///< initial pty window size
  uint16_t cols = 80;
};

/// How a command ended: exited with a code, or was killed by a signal.
struct ExitStatus {
  bool signaled = false;
  uint32_t value = 0;  ///< exit code (0-255) or signal number
  /// Shell convention: code, or 128 + signal.
  int shellCode() const { return signaled ? 128 + static_cast<int>(value) : static_cast<int>(value); }
};

/// Serializes a frame (header + payload). The payload must be <= kMaxPayload.
std::string encodeFrame(FrameType type, uint32_t channel, std::string_view payload);

std::string encodeExec(const ExecRequest& request);
std::expected<ExecRequest, std::string> decodeExec(std::string_view payload);
std::string encodeExit(const ExitStatus& status);
std::expected<ExitStatus, std::string> decodeExit(std::string_view payload);
std::string encodeResize(uint16_t rows, uint16_t cols);
std::expected<std::pair<uint16_t, uint16_t>, std::string> decodeResize(std::string_view payload);
/// For kSignal, kStdinAck and the version in kHello.
std::string encodeU32(uint32_t value);
std::expected<uint32_t, std::string> decodeU32(std::string_view payload);
std::string encodeHello(std::string_view description);
std::expected<std::pair<uint32_t, std::string>, std::string> decodeHello(std::string_view payload);

/// Incremental frame parser. feed() bytes as they arrive, then call next()
/// until it returns no frame. After an error the decoder is poisoned: the
/// stream is out of sync and the connection must be dropped.
class FrameDecoder {
 public:
  /// Appends bytes. Never buffers more than one frame: when a frame is
  /// complete, call next() before feeding more (feed() returns the number of
  /// bytes it accepted; the caller keeps the rest).
  size_t feed(std::string_view bytes);
  /// The next complete frame, std::nullopt if more bytes are needed, or an
  /// error naming the problem (bad version, unknown type, oversized, flags).
  std::expected<std::optional<Frame>, std::string> next();
  /// Feeds all of `bytes` and calls `onFrame` for every frame completed, in
  /// order. Returns the decoder's error if the stream is malformed; frames
  /// before the bad one have been delivered.
  std::expected<void, std::string> consume(std::string_view bytes, const std::function<void(Frame&&)>& onFrame);
  /// Bytes buffered but not yet returned as a frame (0 at a clean boundary).
  size_t pending() const { return buffer_.size(); }

 private:
  std::expected<void, std::string> checkHeader();
  std::string buffer_;
  size_t wanted_ = kHeaderSize;  // bytes needed for the current frame
  bool headerChecked_ = false;
  std::string error_;
};

}  // namespace airlock::protocol
