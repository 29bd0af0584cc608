#include "session/attach_frames.h"

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

Result<std::optional<AttachFrame>> AttachFrameReader::next() {
  if (buffer_.empty()) return std::nullopt;
  const char type = buffer_[0];
  if (type != 'i' && type != 'w' && type != 'o' && type != 'x')
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
