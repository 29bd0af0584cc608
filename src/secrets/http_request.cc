#include "secrets/http_request.h"

#include <http_parser.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <strings.h>

namespace airlock::secrets {

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return &v;
  return nullptr;
}

namespace {

/// The parser's view of the request being read.
struct Reading {
  HttpRequest request;
  const HttpRequestLimits* limits = nullptr;
  size_t headerBytes = 0;
  bool lastWasValue = true;  ///< the previous header callback was a value (a new name starts)
  bool complete = false;
  int refusal = 0;  ///< HTTP status when a callback refused
  std::string reason;
};

Reading& of(http_parser* p) { return *static_cast<Reading*>(p->data); }

int refuse(http_parser* p, int status, std::string reason) {
  of(p).refusal = status;
  of(p).reason = std::move(reason);
  return 1;
}

int countHeader(http_parser* p, size_t n) {
  Reading& r = of(p);
  r.headerBytes += n;
  if (r.headerBytes > r.limits->maxHeaderBytes) return refuse(p, 431, "request headers too large");
  return 0;
}

int onUrl(http_parser* p, const char* at, size_t n) {
  if (countHeader(p, n)) return 1;
  of(p).request.target.append(at, n);
  return 0;
}

/// A character of a header name (RFC 9110 5.1, token). libhttp-parser lets
/// spaces through ("Transfer-Encoding : chunked" is a header named
/// "Transfer-Encoding " it treats as chunked), which would pass the broker's
/// filters and reach the API beside its own framing and credentials.
bool isTokenChar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~"))
    if (c == static_cast<unsigned char>(t)) return true;
  return false;
}

int onHeaderField(http_parser* p, const char* at, size_t n) {
  if (countHeader(p, n)) return 1;
  for (size_t i = 0; i < n; ++i)
    if (!isTokenChar(static_cast<unsigned char>(at[i]))) return refuse(p, 400, "malformed header name");
  Reading& r = of(p);
  if (r.lastWasValue) r.request.headers.emplace_back();
  r.request.headers.back().first.append(at, n);
  r.lastWasValue = false;
  return 0;
}

int onHeaderValue(http_parser* p, const char* at, size_t n) {
  if (countHeader(p, n)) return 1;
  Reading& r = of(p);
  if (r.request.headers.empty()) return refuse(p, 400, "malformed header");
  r.request.headers.back().second.append(at, n);
  r.lastWasValue = true;
  return 0;
}

int onHeadersComplete(http_parser* p) {
  Reading& r = of(p);
  if (p->upgrade) return refuse(p, 501, "protocol upgrades are not brokered");
  if (r.request.target.empty() || r.request.target[0] != '/')
    return refuse(p, 400, "the request target must be a path (origin-form)");
  if ((p->flags & F_CONTENTLENGTH) && p->content_length > r.limits->maxBodyBytes)
    return refuse(p, 413, "request body too large");
  r.request.method = http_method_str(static_cast<http_method>(p->method));
  return 0;
}

int onBody(http_parser* p, const char* at, size_t n) {
  Reading& r = of(p);
  if (r.request.body.size() + n > r.limits->maxBodyBytes) return refuse(p, 413, "request body too large");
  r.request.body.append(at, n);
  return 0;
}

int onMessageComplete(http_parser* p) {
  of(p).complete = true;
  http_parser_pause(p, 1);  // one request per connection: whatever follows is not read
  return 0;
}

}  // namespace

Result<HttpRequest> readHttpRequest(int fd, const HttpRequestLimits& limits) {
  http_parser_settings settings;
  http_parser_settings_init(&settings);
  settings.on_url = onUrl;
  settings.on_header_field = onHeaderField;
  settings.on_header_value = onHeaderValue;
  settings.on_headers_complete = onHeadersComplete;
  settings.on_body = onBody;
  settings.on_message_complete = onMessageComplete;
  http_parser parser;
  http_parser_init(&parser, HTTP_REQUEST);
  Reading reading;
  reading.limits = &limits;
  parser.data = &reading;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limits.timeoutMs);
  char buf[16384];
  while (!reading.complete) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) != 1)
      return failWith(408, "the request did not arrive in time");
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return failWith(400, "the connection closed before the request was complete");
    size_t used = http_parser_execute(&parser, &settings, buf, static_cast<size_t>(n));
    if (reading.refusal) return failWith(reading.refusal, "{}", reading.reason);
    auto err = HTTP_PARSER_ERRNO(&parser);
    if (err != HPE_OK && !(err == HPE_PAUSED && reading.complete))
      return failWith(400, "malformed request: {}", http_errno_description(err));
    if (used != static_cast<size_t>(n) && !reading.complete) return failWith(400, "malformed request");
  }
  return std::move(reading.request);
}

}  // namespace airlock::secrets
