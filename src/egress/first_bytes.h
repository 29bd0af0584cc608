#pragma once
// The name a client asks for in its first bytes: the SNI of a TLS
// ClientHello, or the Host header of a plain HTTP request.

#include <optional>
#include <string>
#include <string_view>

namespace airlock::egress {

/// Result of looking at a connection's first bytes.
struct RequestedName {
  enum class State { kIncomplete, kNone, kFound } state = State::kIncomplete;
  std::string name;  ///< lower case, no port, no trailing dot (kFound)
  bool tls = false;
};

/// Parses a TLS ClientHello record (SNI host_name) or an HTTP/1.x request
/// (Host header). kIncomplete: read more; kNone: no name can be found.
RequestedName requestedName(std::string_view bytes);

/// Whether a connection's first bytes are an SSH client's identification
/// string (RFC 4253 section 4.2: "SSH-2.0-", printable, CR LF, at most 255
/// bytes). SSH names no host: the egress proxy admits it to port 22 of an
/// address answered for a name allowed with :22, on that alone.
enum class SshIdentification { kIncomplete, kNo, kYes };
SshIdentification sshIdentification(std::string_view bytes);

}  // namespace airlock::egress
