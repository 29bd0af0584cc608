#include "session/attach_frames.h"

#include <tuple>

namespace airlock::session {

std::string encodeAttachFrame(AttachFrameType type, std::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  out.push_back(static_cast<char>(type));
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(payload);
  return out;
}

std::string encodeResize(uint16_t rows, uint16_t cols) {
  const char p[4] = {static_cast<char>(rows >> 8), static_cast<char>(rows & 0xff), static_cast<char>(cols >> 8),
                     static_cast<char>(cols & 0xff)};
  return encodeAttachFrame(AttachFrameType::kResize, std::string_view(p, 4));
}

std::optional<std::pair<uint16_t, uint16_t>> decodeResize(std::string_view p) {
  if (p.size() != 4) return std::nullopt;
  auto byte = [&](size_t i) { return static_cast<uint16_t>(static_cast<unsigned char>(p[i])); };
  uint16_t rows = static_cast<uint16_t>(byte(0) << 8 | byte(1)), cols = static_cast<uint16_t>(byte(2) << 8 | byte(3));
  if (rows == 0 || cols == 0) return std::nullopt;
  return std::pair{rows, cols};
}

std::string encodeExecStart(const ExecStart& start) {
  std::string p;
  p.push_back(start.tty ? 't' : '-');
  for (uint16_t v : {start.rows, start.cols}) {
    p.push_back(static_cast<char>(v >> 8));
    p.push_back(static_cast<char>(v & 0xff));
  }
  for (const auto& arg : start.argv) {
    p += arg;
    p.push_back('\0');
  }
  return encodeAttachFrame(AttachFrameType::kExec, p);
}

std::optional<ExecStart> decodeExecStart(std::string_view p) {
  if (p.size() < 5 || (p[0] != 't' && p[0] != '-')) return std::nullopt;
  ExecStart start;
  start.tty = p[0] == 't';
  auto size = decodeResize(p.substr(1, 4));
  if (size) std::tie(start.rows, start.cols) = *size;
  std::string_view rest = p.substr(5);
  while (!rest.empty()) {
    size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) return std::nullopt;
    start.argv.emplace_back(rest.substr(0, nul));
    rest.remove_prefix(nul + 1);
  }
  if (start.argv.empty() || start.argv.front().empty()) return std::nullopt;
  return start;
}

Result<std::optional<AttachFrame>> AttachFrameReader::next() {
  if (buffer_.empty()) return std::nullopt;
  const char type = buffer_[0];
  if (std::string_view("aiwcedorx").find(type) == std::string_view::npos)
    return fail("attach socket: unknown frame type 0x{:02x}", static_cast<unsigned char>(type));
  if (buffer_.size() < 5) return std::nullopt;
  uint32_t n = 0;
  for (size_t i = 1; i < 5; ++i) n = n << 8 | static_cast<unsigned char>(buffer_[i]);
  if (n > kMaxFramePayload) return fail("attach socket: a frame of {} bytes (at most {})", n, kMaxFramePayload);
  if (buffer_.size() < 5 + size_t{n}) return std::nullopt;
  AttachFrame frame{static_cast<AttachFrameType>(type), buffer_.substr(5, n)};
  buffer_.erase(0, 5 + size_t{n});
  return frame;
}

}  // namespace airlock::session
