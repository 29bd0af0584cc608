#include "egress/dns_tcp.h"

namespace airlock::egress {

std::string frameDnsMessage(std::string_view message) {
  if (message.size() > kMaxDnsTcpMessage) return {};
  std::string out;
  out.reserve(message.size() + 2);
  out.push_back(static_cast<char>((message.size() >> 8) & 0xff));
  out.push_back(static_cast<char>(message.size() & 0xff));
  out.append(message);
  return out;
}

std::optional<std::string> DnsTcpReader::next() {
  if (pending() < 2) return std::nullopt;
  size_t length = (static_cast<size_t>(static_cast<unsigned char>(buffer_[start_])) << 8) |
                  static_cast<unsigned char>(buffer_[start_ + 1]);
  if (pending() < 2 + length) return std::nullopt;
  std::string message = buffer_.substr(start_ + 2, length);
  start_ += 2 + length;
  // Drop consumed bytes once they dominate, so a long pipelined session stays small.
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  } else if (start_ > 4096 && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return message;
}

}  // namespace airlock::egress
