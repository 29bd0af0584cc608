#include "mcp/remote_server.h"

#include <curl/curl.h>
#include <strings.h>

#include <fmt/format.h>

#include "common/c_ptr.h"
#include "common/encoding.h"
#include "common/exit_codes.h"

namespace airlock::mcp {

namespace {

using nlohmann::json;

std::string trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n' || text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return std::string(text);
}

}  // namespace

/// One POST: what came back, read as it arrives (an SSE stream may stay
/// open after the response: the transfer ends once it is there).
struct RemoteServer::Exchange {
  const json* id = nullptr;  ///< the request's id; null: a notification
  size_t limit = 0;
  long status = 0;
  std::string contentType, sessionId, body;
  std::string events;  ///< SSE text not yet split into events
  std::string dataLines;
  std::optional<json> answer;
  bool overLimit = false;
  bool tooDeep = false;  ///< a message nested deeper than kMaxMessageDepth came

  /// An SSE event's data: the response when it is the one to `id`.
  void onEvent(const std::string& data) {
    if (jsonDepth(data) > kMaxMessageDepth) {
      tooDeep = true;
      return;
    }
    json message = json::parse(data, nullptr, false);
    if (id && message.is_object() && message.contains("id") && message["id"] == *id &&
        (message.contains("result") || message.contains("error")))
      answer = std::move(message);
  }
  /// Splits `events` into lines (LF or CRLF) and events (a blank line).
  void onSse() {
    size_t start = 0;
    for (size_t nl; !answer && (nl = events.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string line = events.substr(start, nl - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) {
        if (!dataLines.empty()) onEvent(dataLines);
        dataLines.clear();
      } else if (line.starts_with("data:")) {
        std::string_view value = std::string_view(line).substr(5);
        if (value.starts_with(' ')) value.remove_prefix(1);
        if (!dataLines.empty()) dataLines += '\n';
        dataLines += value;
      }
    }
    events.erase(0, start);
  }

  static size_t onHeader(char* data, size_t size, size_t count, void* self) {
    auto* x = static_cast<Exchange*>(self);
    std::string_view line(data, size * count);
    if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue)
      x->contentType.clear();
      return size * count;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * count;
    const std::string name = asciiLower(line.substr(0, colon));
    if (name == "content-type") x->contentType = asciiLower(trimmed(line.substr(colon + 1)));
    if (name == "mcp-session-id") x->sessionId = trimmed(line.substr(colon + 1));
    return size * count;
  }

  static size_t onBody(char* data, size_t size, size_t count, void* self) {
    auto* x = static_cast<Exchange*>(self);
    const size_t n = size * count;
    if (x->contentType.starts_with("text/event-stream")) {
      x->events.append(data, n);
      if (x->events.size() + x->dataLines.size() > x->limit) {
        x->overLimit = true;
        return 0;
      }
      x->onSse();
      return x->answer || x->tooDeep ? 0 : n;  // 0 ends the transfer: the answer is in
    }
    if (x->body.size() + n > x->limit) {
      x->overLimit = true;
      return 0;
    }
    x->body.append(data, n);
    return n;
  }
};

RemoteServer::RemoteServer(RemoteServerOptions options) : options_(std::move(options)) {}

RemoteServer::~RemoteServer() { stop(); }

Result<json> RemoteServer::post(const json& message, const json* id, std::chrono::milliseconds timeout,
                                bool initializing) {
  if (stopped_) return failWith(exit_code::kInternal, "the session with {} has ended", options_.url);
  std::string text;
  try {
    text = message.dump();
  } catch (const json::exception& e) {
    return failWith(exit_code::kInternal, "cannot encode a message: {}", e.what());
  }
  CPtr<CURL, curl_easy_cleanup> curl(curl_easy_init());
  if (!curl) return failWith(exit_code::kInternal, "cannot start an HTTP request");
  CURL* c = curl.get();
  std::vector<std::string> headerLines = {"Content-Type: application/json",
                                          "Accept: application/json, text/event-stream"};
  if (!options_.token.empty()) headerLines.push_back("Authorization: Bearer " + options_.token);
  {
    std::lock_guard lock(mutex_);
    if (!sessionId_.empty()) headerLines.push_back("Mcp-Session-Id: " + sessionId_);
    if (!protocolVersion_.empty()) headerLines.push_back("MCP-Protocol-Version: " + protocolVersion_);
  }
  CPtr<curl_slist, curl_slist_free_all> headers;
  for (const auto& h : headerLines) headers.reset(curl_slist_append(headers.release(), h.c_str()));
  Exchange x;
  x.id = id;
  x.limit = options_.maxMessageBytes;
  curl_easy_setopt(c, CURLOPT_URL, options_.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, text.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(text.size()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min<int64_t>(timeout.count(), 15000)));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, Exchange::onHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Exchange::onBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
  // stop() ends a call in flight (a stream of progress events without the answer).
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(
      c, CURLOPT_XFERINFOFUNCTION, +[](void* stopped, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
        return static_cast<std::atomic<bool>*>(stopped)->load() ? 1 : 0;
      });
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &stopped_);
  if (!options_.caFile.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.caFile.c_str());
  const CURLcode code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x.status);
  if (x.overLimit) return failWith(exit_code::kInternal, "{} sent an answer over {} bytes", options_.url, x.limit);
  if (x.tooDeep || jsonDepth(x.body) > kMaxMessageDepth)
    return failWith(exit_code::kInternal, "{} sent a message nested deeper than {} levels", options_.url,
                    kMaxMessageDepth);
  if (code != CURLE_OK && !x.answer)
    return failWith(exit_code::kInternal, "cannot reach {}: {}", options_.url, curl_easy_strerror(code));
  if (x.status == 404 && !initializing)
    return failWith(exit_code::kInternal, "{} ended the session (HTTP 404)", options_.url);
  if (!id) {
    if (x.status == 202 || x.status == 200 || x.status == 204) return json();
    return failWith(exit_code::kInternal, "{} answered a notification with HTTP {}", options_.url, x.status);
  }
  if (x.status != 200) return failWith(exit_code::kInternal, "{} answered HTTP {}", options_.url, x.status);
  if (initializing && !x.sessionId.empty()) {
    std::lock_guard lock(mutex_);
    sessionId_ = x.sessionId;
  }
  if (x.answer) return std::move(*x.answer);
  if (x.contentType.starts_with("text/event-stream")) {
    x.events += "\n\n";  // a last event without its blank line
    x.onSse();
    if (x.answer) return std::move(*x.answer);
    return failWith(exit_code::kInternal, "{}'s event stream ended without the answer", options_.url);
  }
  json answer = json::parse(x.body, nullptr, false);
  if (!answer.is_object() || answer.value("id", json()) != *id)
    return failWith(exit_code::kInternal, "{} did not answer with the JSON-RPC response", options_.url);
  return answer;
}

Result<json> RemoteServer::initialize(const json& params, std::chrono::milliseconds timeout) {
  const json id = nextId_++;
  auto answer =
      post({{"jsonrpc", "2.0"}, {"id", id}, {"method", "initialize"}, {"params", params}}, &id, timeout, true);
  if (answer && answer->contains("result") && (*answer)["result"].is_object()) {
    const json& version = (*answer)["result"].value("protocolVersion", json());
    if (version.is_string()) {
      std::lock_guard lock(mutex_);
      protocolVersion_ = version.get<std::string>();
    }
  }
  return answer;
}

Result<json> RemoteServer::request(const std::string& method, const json& params, std::chrono::milliseconds timeout) {
  const json id = nextId_++;
  json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  return post(message, &id, timeout, false);
}

Result<> RemoteServer::notify(const std::string& method, const json& params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  auto sent = post(message, nullptr, std::chrono::milliseconds(15000), false);
  if (!sent) return std::unexpected(sent.error());
  return {};
}

void RemoteServer::stop() {
  if (stopped_.exchange(true)) return;
  std::string session, version;
  {
    std::lock_guard lock(mutex_);
    session = sessionId_;
    version = protocolVersion_;
  }
  if (session.empty()) return;
  CPtr<CURL, curl_easy_cleanup> curl(curl_easy_init());
  if (!curl) return;
  CPtr<curl_slist, curl_slist_free_all> headers;
  headers.reset(curl_slist_append(nullptr, ("Mcp-Session-Id: " + session).c_str()));
  if (!version.empty())
    headers.reset(curl_slist_append(headers.release(), ("MCP-Protocol-Version: " + version).c_str()));
  if (!options_.token.empty())
    headers.reset(curl_slist_append(headers.release(), ("Authorization: Bearer " + options_.token).c_str()));
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, options_.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
  curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
  if (!options_.caFile.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.caFile.c_str());
  (void)curl_easy_perform(c);
}

}  // namespace airlock::mcp
