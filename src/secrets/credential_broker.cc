#include "secrets/credential_broker.h"

#include <curl/curl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <strings.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/encoding.h"

namespace airlock::secrets {
namespace {

/// How long a write to the guest may block (the guest stopped reading).
constexpr long kGuestWriteTimeoutS = 120;

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

/// Request headers never forwarded: hop-by-hop ones (RFC 9110 7.6.1), the
/// ones the broker sets itself, and every credential the guest could send.
bool droppedRequestHeader(std::string_view name) {
  for (std::string_view h : {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                             "upgrade", "host", "content-length", "expect", "authorization", "proxy-authorization",
                             "x-api-key", "x-goog-api-key", "cookie"})
    if (equalsIgnoringCase(name, h)) return true;
  return false;
}

/// Response headers never passed back: hop-by-hop ones and the framing
/// (the guest's answer is close-delimited, the body as libcurl decoded it).
bool droppedResponseHeader(std::string_view name) {
  for (std::string_view h : {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                             "upgrade", "content-length", "set-cookie", "alt-svc"})
    if (equalsIgnoringCase(name, h)) return true;
  return false;
}

/// The methods the API is called with. Others are not forwarded: TRACE
/// would have a server echo the request, the real token included, back to
/// the guest, and WebDAV and the like have no business with the API.
bool forwardedMethod(std::string_view method) {
  for (std::string_view m : {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
    if (method == m) return true;
  return false;
}

/// A path whose bytes are sent as they are and mean what the prefix check
/// saw: '/'-separated segments of RFC 3986 pchars without '%' (no encoded
/// slash or dot), none empty ("//"), "." or ".." (libcurl, and servers,
/// remove dot segments: "/v1/.." would reach "/").
bool plainPath(std::string_view path) {
  if (!path.starts_with('/')) return false;
  for (unsigned char c : path) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              std::string_view("/-._~!$&'()*+,;=:@").find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) return false;
  }
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view segment = path.substr(start, end - start);
    if (segment == "." || segment == "..") return false;
    if (segment.empty() && end != path.size()) return false;  // "//" (a trailing '/' is fine)
    start = end + 1;
  }
  return true;
}

/// The query: printable ASCII without '#' (a fragment is never sent; libcurl would cut it off).
bool plainQuery(std::string_view query) {
  for (unsigned char c : query)
    if (c <= 0x20 || c >= 0x7f || c == '#') return false;
  return true;
}

/// git's smart HTTP and nothing else on a git host (the token must not
/// reach the host's web pages or API): GET
/// REPO/info/refs?service=git-upload-pack or git-receive-pack, POST
/// REPO/git-upload-pack or REPO/git-receive-pack with no query and git's
/// own Content-Type; never a ';' (path parameters) in the path.
bool gitSmartHttp(const HttpRequest& request, std::string_view path, std::string_view query) {
  if (path.find(';') != std::string_view::npos) return false;
  if (path.ends_with("/info/refs"))
    return request.method == "GET" && path.size() > 10 &&
           (query == "service=git-upload-pack" || query == "service=git-receive-pack");
  for (std::string_view service : {"git-upload-pack", "git-receive-pack"}) {
    if (!path.ends_with("/" + std::string(service)) || path.size() <= service.size() + 1) continue;
    const std::string* type = request.header("Content-Type");
    return request.method == "POST" && query.empty() && type &&
           equalsIgnoringCase(*type, "application/x-" + std::string(service) + "-request");
  }
  return false;
}

bool headerTextOk(std::string_view s) {
  for (unsigned char c : s)
    if (c == '\r' || c == '\n' || c == 0) return false;
  return true;
}

std::string reasonPhrase(long status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

/// An error answer in the shape the Anthropic and OpenAI clients print.
void answerError(int fd, long status, const std::string& message) {
  nlohmann::json body = {{"type", "error"}, {"error", {{"type", "airlock_broker"}, {"message", message}}}};
  std::string text = body.dump();
  writeAll(fd, fmt::format("HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
                           "Connection: close\r\n\r\n{}",
                           status, reasonPhrase(status), text.size(), text));
}

/// One attempt's answer as it streams to the guest.
struct Transfer {
  int guest = -1;
  const BrokerRoute* route = nullptr;
  bool holdUnauthorized = false;  ///< a 401 is not passed on (the first attempt)
  long status = 0;
  bool unauthorized = false;      ///< held back a 401
  bool headersSent = false;
  bool guestGone = false;
  std::string head;               ///< the answer's header block being built
};

size_t onHeader(char* data, size_t size, size_t count, void* p) {
  auto& t = *static_cast<Transfer*>(p);
  std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a status line (again after a 1xx)
    size_t sp = line.find(' ');
    t.status = sp == std::string_view::npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
    t.head = fmt::format("HTTP/1.1 {} {}\r\n", t.status, reasonPhrase(t.status));
    return line.size();
  }
  if (line == "\r\n" || line == "\n") {
    if (t.status >= 100 && t.status < 200) return line.size();  // interim answer: the final one follows
    if (t.status == 401 && t.holdUnauthorized) {
      t.unauthorized = true;
      return 0;  // abort this attempt; the caller refreshes and retries
    }
    t.head += "Connection: close\r\n\r\n";
    if (!writeAll(t.guest, t.head)) {
      t.guestGone = true;
      return 0;
    }
    t.headersSent = true;
    return line.size();
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return line.size();
  std::string_view name = line.substr(0, colon);
  if (droppedResponseHeader(name)) return line.size();
  if (t.route && !t.route->selfUrl.empty() && equalsIgnoringCase(name, "location")) {
    // Back through the broker when it points at a listed host.
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    for (const auto& host : t.route->hostsInPath) {
      const std::string prefix = "https://" + host + "/";
      if (value.starts_with(prefix)) {
        t.head += fmt::format("Location: {}/{}/{}", t.route->selfUrl, host, value.substr(prefix.size()));
        return line.size();
      }
    }
  }
  t.head.append(line);
  return line.size();
}

size_t onBody(char* data, size_t size, size_t count, void* p) {
  auto& t = *static_cast<Transfer*>(p);
  size_t n = size * count;
  if (!t.headersSent || !writeAll(t.guest, std::string_view(data, n))) {
    t.guestGone = true;
    return 0;
  }
  return n;
}

}  // namespace

CredentialBroker::CredentialBroker(BrokerRoute route, TokenSource& tokens, BrokerOptions options)
    : route_(std::move(route)), tokens_(tokens), options_(std::move(options)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

void CredentialBroker::serve(Fd guest, const BrokerLogFn& sessionLog) const {
  auto log = [this, &sessionLog](const std::string& line) {
    if (sessionLog) sessionLog("broker " + route_.agent + ": " + line);
  };
  // A guest that stops reading its answer must not hold this thread (and
  // the upstream connection) for ever: a write blocked this long fails.
  timeval sendTimeout{kGuestWriteTimeoutS, 0};
  ::setsockopt(guest.get(), SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, sizeof sendTimeout);
  // Each request may hold a body of limits.maxBodyBytes: a bounded number at once.
  struct Slot {
    std::atomic<unsigned>& n;
    ~Slot() { --n; }
  } slot{serving_};
  if (++serving_ > options_.maxConcurrent) {
    log(fmt::format("refused a connection: {} requests at once already", options_.maxConcurrent));
    answerError(guest.get(), 503, fmt::format("airlock broker: {} requests at once already", options_.maxConcurrent));
    return;
  }
  auto request = readHttpRequest(guest.get(), options_.limits);
  if (!request) {
    log("refused a request: " + request.error().message);
    answerError(guest.get(), request.error().code, "airlock broker: " + request.error().message);
    return;
  }
  // A git route's first segment names its host: the rest is forwarded there.
  std::string upstream = route_.upstream, target = request->target;
  if (!route_.hostsInPath.empty()) {
    const size_t slash = target.find('/', 1);
    const std::string host = target.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    if (slash == std::string::npos ||
        std::find(route_.hostsInPath.begin(), route_.hostsInPath.end(), host) == route_.hostsInPath.end()) {
      log(fmt::format("refused {} {} (not a git host of this session)", request->method,
                      target.substr(0, target.find('?'))));
      answerError(guest.get(), 403, fmt::format("airlock broker: {} is not a git host of this session (--git-host)",
                                                host));
      return;
    }
    upstream = "https://" + host;
    target = target.substr(slash);
  }
  const size_t question = target.find('?');
  const std::string path = target.substr(0, question);
  bool allowed = false;
  for (const auto& prefix : route_.pathPrefixes) allowed = allowed || path.starts_with(prefix);
  const std::string_view query = question == std::string::npos ? "" : std::string_view(target).substr(question + 1);
  if (!route_.hostsInPath.empty() && !gitSmartHttp(*request, path, query)) allowed = false;
  if (!allowed || !plainPath(path) || (question != std::string::npos && !plainQuery(query))) {
    log(fmt::format("refused {} {} (not a path of the API)", request->method, path));
    answerError(guest.get(), 403, fmt::format("airlock broker: {} is not forwarded", path));
    return;
  }
  if (!forwardedMethod(request->method)) {
    log(fmt::format("refused {} {} (method not forwarded)", request->method, path));
    answerError(guest.get(), 405, fmt::format("airlock broker: {} is not forwarded", request->method));
    return;
  }
  auto token = tokens_.token();
  for (int attempt = 0;; ++attempt) {
    if (!token) {
      log(token.error().message);
      answerError(guest.get(), 403, "airlock: " + token.error().message);
      return;
    }
    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
    curl_slist* list = nullptr;
    for (const auto& [name, value] : request->headers)
      if (!droppedRequestHeader(name) && headerTextOk(name) && headerTextOk(value))
        list = curl_slist_append(list, (name + ": " + value).c_str());
    const std::string authorization = route_.auth == BrokerRoute::Auth::kGitBasic
                                          ? "Basic " + base64Encode("x-access-token:" + *token)
                                          : "Bearer " + *token;
    list = curl_slist_append(list, ("Authorization: " + authorization).c_str());
    list = curl_slist_append(list, "Expect:");  // no 100-continue round trip
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(list, curl_slist_free_all);
    Transfer t;
    t.guest = guest.get();
    t.route = &route_;
    t.holdUnauthorized = true;
    const std::string url = upstream + target;
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);  // the path checked above is the path sent
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 15L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);   // an answer silent for 10 minutes is dead
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 600L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    if (!options_.caFile.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.caFile.c_str());
    if (request->method == "GET") {
      curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else if (request->method == "HEAD") {
      curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, request->body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request->body.size()));
      if (request->method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request->method.c_str());
    }
    CURLcode rc = curl_easy_perform(c);
    if (t.unauthorized) {
      if (attempt > 0) break;  // refused again: one refresh per request (each may spend a refresh token)
      log(fmt::format("{} {}: the server refused the token (401){}", request->method, path,
                      route_.auth == BrokerRoute::Auth::kBearer ? "; refreshing on the host" : ""));
      token = tokens_.replaceRejected(*token);
      continue;
    }
    if (rc != CURLE_OK && !t.headersSent && !t.guestGone) {
      log(fmt::format("{} {}: {}", request->method, path, curl_easy_strerror(rc)));
      answerError(guest.get(), 502, fmt::format("airlock broker: {} unreachable: {}", upstream,
                                                curl_easy_strerror(rc)));
      return;
    }
    log(fmt::format("{} {} -> {}{}", request->method, path, t.status,
                    rc == CURLE_OK ? "" : std::string(" (cut: ") + curl_easy_strerror(rc) + ")"));
    return;
  }
  log(fmt::format("{} {}: the API refused the refreshed token too", request->method, path));
  answerError(guest.get(), 403,
              fmt::format("airlock: the API refused the {} login; run `airlock login {}`", route_.agent, route_.agent));
}

}  // namespace airlock::secrets
