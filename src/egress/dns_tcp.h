#pragma once
// DNS over TCP framing (RFC 1035 4.2.2, RFC 7766 8): every message is
// preceded by its length as a two-byte big-endian integer; a client may send
// several queries on one connection (pipelining). Pure, no sockets.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::egress {

/// Largest DNS message the two-byte length can carry.
inline constexpr size_t kMaxDnsTcpMessage = 65535;

/// `message` with its length prefix; "" when it is longer than kMaxDnsTcpMessage.
std::string frameDnsMessage(std::string_view message);

/// Splits a TCP byte stream into DNS messages.
class DnsTcpReader {
 public:
  /// Appends bytes as they arrive (any split, any number of messages).
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  /// The next complete message (possibly empty for a zero length prefix), or
  /// nullopt until more bytes arrive.
  std::optional<std::string> next();
  /// Bytes received but not yet returned as a message (at most one partial
  /// message plus what the last feed() brought).
  size_t pending() const { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  size_t start_ = 0;
};

}  // namespace airlock::egress
