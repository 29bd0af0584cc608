#include "vm/protocol.h"

#include <cstring>

namespace airlock::protocol {
namespace {

void putU16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}

void putU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void putString(std::string& out, std::string_view s) {
  putU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

uint32_t readU32At(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
  return v;
}

/// Bounds-checked reader over a payload.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool u8(uint8_t& v) {
    if (left() < 1) return false;
    v = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  bool u16(uint16_t& v) {
    if (left() < 2) return false;
    v = static_cast<uint16_t>(static_cast<uint8_t>(data_[pos_]) | (static_cast<uint8_t>(data_[pos_ + 1]) << 8));
    pos_ += 2;
    return true;
  }
  bool u32(uint32_t& v) {
    if (left() < 4) return false;
    v = readU32At(data_, pos_);
    pos_ += 4;
    return true;
  }
  bool str(std::string& s) {
    uint32_t n = 0;
    if (!u32(n) || left() < n) return false;
    s.assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool list(std::vector<std::string>& out) {
    uint32_t n = 0;
    if (!u32(n) || n > kMaxListEntries || n > left() / 4) return false;
    out.resize(n);
    for (auto& s : out)
      if (!str(s)) return false;
    return true;
  }
  size_t left() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

bool hasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

}  // namespace

bool isKnownType(uint8_t type) {
  return type >= static_cast<uint8_t>(FrameType::kHello) && type <= static_cast<uint8_t>(FrameType::kExport);
}

const char* typeName(FrameType type) {
  switch (type) {
    case FrameType::kHello: return "hello";
    case FrameType::kExec: return "exec";
    case FrameType::kStdin: return "stdin";
    case FrameType::kStdout: return "stdout";
    case FrameType::kStderr: return "stderr";
    case FrameType::kResize: return "resize";
    case FrameType::kSignal: return "signal";
    case FrameType::kExit: return "exit";
    case FrameType::kError: return "error";
    case FrameType::kStdinAck: return "stdin-ack";
    case FrameType::kShutdown: return "shutdown";
    case FrameType::kExport: return "export";
  }
  return "unknown";
}

std::string encodeFrame(FrameType type, uint32_t channel, std::string_view payload) {
  std::string out;
  out.reserve(kHeaderSize + payload.size());
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(type));
  putU16(out, 0);
  putU32(out, channel);
  putU32(out, static_cast<uint32_t>(payload.size()));
  out.append(payload);
  return out;
}

std::string encodeExec(const ExecRequest& r) {
  std::string out;
  putU32(out, r.uid);
  putU32(out, r.gid);
  out.push_back(r.pty ? 1 : 0);
  putU16(out, r.rows);
  putU16(out, r.cols);
  putString(out, r.cwd);
  putU32(out, static_cast<uint32_t>(r.argv.size()));
  for (const auto& a : r.argv) putString(out, a);
  putU32(out, static_cast<uint32_t>(r.env.size()));
  for (const auto& e : r.env) putString(out, e);
  return out;
}

std::expected<ExecRequest, std::string> decodeExec(std::string_view payload) {
  Reader in(payload);
  ExecRequest r;
  uint8_t pty = 0;
  if (!in.u32(r.uid) || !in.u32(r.gid) || !in.u8(pty) || !in.u16(r.rows) || !in.u16(r.cols) || !in.str(r.cwd) ||
      !in.list(r.argv) || !in.list(r.env))
    return std::unexpected("exec request is truncated or malformed");
  if (in.left() != 0) return std::unexpected("exec request has trailing bytes");
  if (pty > 1) return std::unexpected("exec request has an invalid pty flag");
  r.pty = pty == 1;
  if (r.argv.empty() || r.argv[0].empty()) return std::unexpected("exec request has an empty argv");
  if (r.cwd.empty() || r.cwd[0] != '/') return std::unexpected("exec request cwd must be an absolute path");
  if (hasNul(r.cwd)) return std::unexpected("exec request cwd contains a NUL byte");
  for (const auto& a : r.argv)
    if (hasNul(a)) return std::unexpected("exec request argv contains a NUL byte");
  for (const auto& e : r.env)
    if (hasNul(e) || e.find('=') == std::string::npos || e[0] == '=')
      return std::unexpected("exec request env entry is not NAME=value");
  return r;
}

std::string encodeExit(const ExitStatus& s) {
  std::string out;
  out.push_back(s.signaled ? 1 : 0);
  putU32(out, s.value);
  return out;
}

std::expected<ExitStatus, std::string> decodeExit(std::string_view payload) {
  Reader in(payload);
  uint8_t kind = 0;
  ExitStatus s;
  if (!in.u8(kind) || !in.u32(s.value) || in.left() != 0) return std::unexpected("exit frame must be 5 bytes");
  if (kind > 1) return std::unexpected("exit frame has an invalid kind");
  s.signaled = kind == 1;
  if (!s.signaled && s.value > 255) return std::unexpected("exit code out of range 0-255");
  if (s.signaled && (s.value == 0 || s.value > 64)) return std::unexpected("exit signal out of range 1-64");
  return s;
}

std::string encodeResize(uint16_t rows, uint16_t cols) {
  std::string out;
  putU16(out, rows);
  putU16(out, cols);
  return out;
}

std::expected<std::pair<uint16_t, uint16_t>, std::string> decodeResize(std::string_view payload) {
  Reader in(payload);
  uint16_t rows = 0, cols = 0;
  if (!in.u16(rows) || !in.u16(cols) || in.left() != 0) return std::unexpected("resize frame must be 4 bytes");
  return std::pair{rows, cols};
}

std::string encodeU32(uint32_t value) {
  std::string out;
  putU32(out, value);
  return out;
}

std::expected<uint32_t, std::string> decodeU32(std::string_view payload) {
  Reader in(payload);
  uint32_t v = 0;
  if (!in.u32(v) || in.left() != 0) return std::unexpected("frame must carry exactly 4 bytes");
  return v;
}

std::string encodeHello(std::string_view description) {
  std::string out;
  putU32(out, kVersion);
  putString(out, description);
  return out;
}

std::expected<std::pair<uint32_t, std::string>, std::string> decodeHello(std::string_view payload) {
  Reader in(payload);
  uint32_t version = 0;
  std::string description;
  if (!in.u32(version) || !in.str(description) || in.left() != 0) return std::unexpected("hello frame is malformed");
  return std::pair{version, description};
}

size_t FrameDecoder::feed(std::string_view bytes) {
  if (!error_.empty()) return 0;
  size_t take = std::min(bytes.size(), wanted_ - buffer_.size());
  buffer_.append(bytes.substr(0, take));
  return take;
}

std::expected<void, std::string> FrameDecoder::checkHeader() {
  auto version = static_cast<uint8_t>(buffer_[0]);
  auto type = static_cast<uint8_t>(buffer_[1]);
  uint16_t flags = static_cast<uint16_t>(static_cast<uint8_t>(buffer_[2]) | (static_cast<uint8_t>(buffer_[3]) << 8));
  uint32_t length = readU32At(buffer_, 8);
  if (version != kVersion)
    return std::unexpected("protocol version " + std::to_string(version) + " is not supported (expected " +
                           std::to_string(kVersion) + ")");
  if (!isKnownType(type)) return std::unexpected("unknown frame type " + std::to_string(type));
  if (flags != 0) return std::unexpected("frame flags must be 0");
  if (length > kMaxPayload)
    return std::unexpected("frame of " + std::to_string(length) + " bytes exceeds the limit of " +
                           std::to_string(kMaxPayload));
  wanted_ = kHeaderSize + length;
  headerChecked_ = true;
  return {};
}

std::expected<std::optional<Frame>, std::string> FrameDecoder::next() {
  if (!error_.empty()) return std::unexpected(error_);
  if (buffer_.size() < kHeaderSize) return std::nullopt;
  if (!headerChecked_) {
    if (auto ok = checkHeader(); !ok) {
      error_ = ok.error();
      return std::unexpected(error_);
    }
  }
  if (buffer_.size() < wanted_) return std::nullopt;
  Frame f;
  f.type = static_cast<FrameType>(buffer_[1]);
  f.channel = readU32At(buffer_, 4);
  f.payload = buffer_.substr(kHeaderSize);
  buffer_.clear();
  wanted_ = kHeaderSize;
  headerChecked_ = false;
  return f;
}

std::expected<void, std::string> FrameDecoder::consume(std::string_view bytes,
                                                      const std::function<void(Frame&&)>& onFrame) {
  for (;;) {
    bytes.remove_prefix(feed(bytes));
    auto frame = next();
    if (!frame) return std::unexpected(frame.error());
    if (*frame)
      onFrame(std::move(**frame));
    else if (bytes.empty())
      return {};
  }
}

}  // namespace airlock::protocol
