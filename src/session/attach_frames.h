#pragma once
// The frames on a detached session's attach socket (SessionLayout::
// attachSocket()), between `airlock attach` and the session's supervisor:
//
//   type (1 byte) | length (4 bytes, big-endian) | payload (length bytes)
//
// client -> supervisor: its first frame says what it is, and until then
//   it gets nothing:
//   - kAttach (empty): `airlock attach`; it then gets the agent's output
//     and sends kInput (keystrokes for the agent's terminal) and kResize
//     (rows, cols: 2 bytes big-endian each);
//   - kExec (encodeExecStart): `airlock exec`, another command in the same
//     VM; it then sends kInput, kResize and kCloseInput for it;
//   - kDiff (empty): `airlock diff`, the changes so far, exported while the
//     agent runs.
// supervisor -> client: kOutput (the terminal's output, or an exec's
//   stdout), kStderr (an exec's stderr without a pty), kExit (the command's
//   exit code as decimal text: the agent's when the session ends, or the
//   exec's). A kDiff is answered with kOutput (the name of the exported
//   change set, a file in the session directory the client removes) and
//   kExit "0", or kStderr (why not) and kExit with an airlock exit code.
// Both ends are airlock processes of the same user; the reader still bounds
// what it buffers (kMaxFramePayload) and fails on an unknown type.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace airlock::session {

enum class AttachFrameType : char {
  kAttach = 'a',
  kInput = 'i',
  kResize = 'w',
  kCloseInput = 'c',
  kExec = 'e',
  kDiff = 'd',
  kOutput = 'o',
  kStderr = 'r',
  kExit = 'x',
};

/// The largest payload of one frame, bytes.
inline constexpr size_t kMaxFramePayload = 64 * 1024;

struct AttachFrame {
  AttachFrameType type;
  std::string payload;
};

/// One frame on the wire (`payload` at most kMaxFramePayload bytes; longer
/// data is split by the caller).
std::string encodeAttachFrame(AttachFrameType type, std::string_view payload);

/// A kResize frame for `rows` x `cols`.
std::string encodeResize(uint16_t rows, uint16_t cols);

/// The rows and columns of a kResize payload; nullopt when it is not 4 bytes
/// or either is 0.
std::optional<std::pair<uint16_t, uint16_t>> decodeResize(std::string_view payload);

/// What `airlock exec` asks for: the command, and a pty of rows x cols when
/// `tty`. The user, environment and working directory are the agent's.
struct ExecStart {
  std::vector<std::string> argv;
  bool tty = false;
  uint16_t rows = 24, cols = 80;
};

/// A kExec frame: 't' or '-', rows and cols (2 bytes big-endian each), then
/// argv as NUL-terminated strings.
std::string encodeExecStart(const ExecStart& start);

/// The ExecStart of a kExec payload; nullopt when it is malformed or argv is
/// empty.
std::optional<ExecStart> decodeExecStart(std::string_view payload);

/// Splits a byte stream into frames.
class AttachFrameReader {
 public:
  /// Adds bytes read from the socket.
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  /// The next complete frame; nullopt when more bytes are needed. Fails on
  /// an unknown type or a payload over kMaxFramePayload (close the peer).
  Result<std::optional<AttachFrame>> next();

 private:
  std::string buffer_;
};

}  // namespace airlock::session
