#pragma once
// One HTTP/1.1 request read from a guest connection (the credential
// broker's input): request line, headers and the whole body (Content-Length
// or chunked, decoded), parsed with libhttp-parser. The guest is hostile:
// the header block and the body are capped, a request split across many
// reads is fine, anything malformed is refused, and the read gives up after
// a timeout.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace airlock::secrets {

/// A request as the guest sent it.
struct HttpRequest {
  std::string method;  ///< "POST"
  std::string target;  ///< origin-form, "/v1/messages?beta=true"
  /// Headers in order, names as sent (compare case-insensitively).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  ///< decoded (no chunk framing)

  /// The first header named `name` (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

/// Limits of readHttpRequest.
struct HttpRequestLimits {
  size_t maxHeaderBytes = 64 * 1024;       ///< request line and headers
  size_t maxBodyBytes = 32u * 1024 * 1024;  ///< decoded body
  int timeoutMs = 30000;                   ///< the whole request must arrive within it
};

/// Reads one request from `fd`. Errors (the message is the one-line reason
/// answered to the guest): the connection closed or timed out first, a
/// malformed request, a header block or body over the limits, a target that
/// is not origin-form ("/..."), an Upgrade request. The error's code is the
/// HTTP status to answer (400, 408, 413, 431, 501).
Result<HttpRequest> readHttpRequest(int fd, const HttpRequestLimits& limits = {});

}  // namespace airlock::secrets
