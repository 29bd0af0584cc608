#include "mcp/host_proxy.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "mcp/guest_view.h"
#include "secrets/http_request.h"

namespace airlock::mcp {

namespace {

using nlohmann::json;

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;

const char* reasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Error";
  }
}

void respond(int fd, int status, const std::string& body, const char* type = "application/json",
             const char* extra = "") {
  writeAll(fd, fmt::format("HTTP/1.1 {} {}\r\n{}Content-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                           status, reasonPhrase(status), extra, type, body.size(), body));
}

void respondJson(int fd, int status, const json& body) {
  std::string text;
  try {
    text = body.dump();
  } catch (const json::exception&) {  // a server's string that is not UTF-8
    text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  respond(fd, status, text);
}

/// The most of a tool's name written to the log.
constexpr size_t kLoggedNameBytes = 200;
/// The most names of tools left out written by one tools/list line.
constexpr size_t kLoggedHiddenTools = 20;

/// A tool's name for the log (cut at kLoggedNameBytes): as is when it is a
/// plain name, else quoted as a JSON string (a guest's name must not pass
/// for the rest of a line).
std::string quotedName(std::string name) {
  if (name.size() > kLoggedNameBytes) name = name.substr(0, kLoggedNameBytes) + "...";
  bool plain = !name.empty();
  for (char c : name)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || c == '.' || c == '/');
  return plain ? name : json(name).dump(-1, ' ', false, json::error_handler_t::replace);
}

/// A call's arguments for the log: their JSON, cut at kLoggedArgumentBytes.
std::string loggedArguments(const json& arguments) {
  std::string text = arguments.is_null() ? "{}" : arguments.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kLoggedArgumentBytes) text = text.substr(0, kLoggedArgumentBytes) + "... (cut)";
  return text;
}

}  // namespace

std::string endpointPath(const std::string& name) { return "/mcp/" + name; }

Result<std::shared_ptr<HostMcpProxy>> HostMcpProxy::start(std::vector<HostServerConfig> servers,
                                                          HostProxyLimits limits) {
  std::shared_ptr<HostMcpProxy> proxy(new HostMcpProxy());
  proxy->limits_ = limits;
  for (auto& config : servers) {
    auto fail = [&](const std::string& why) {
      proxy->shutdown();
      if (config.remote)
        return failWith(exit_code::kUsage, "MCP server {} ({}) did not answer: {}", config.name, config.remote->url,
                        why);
      return failWith(exit_code::kUsage, "MCP server {} (on the host) did not start: {}", config.name, why);
    };
    std::unique_ptr<Upstream> process;
    if (config.remote) {
      process = std::make_unique<RemoteServer>(*config.remote);
    } else {
      auto started = StdioServer::start(config.process);
      if (!started) return fail(started.error().message);
      process = std::move(*started);
    }
    json params = {{"protocolVersion", kProtocolVersion},
                   {"capabilities", json::object()},
                   {"clientInfo", {{"name", "airlock"}, {"version", "1"}}}};
    auto init = process->initialize(params, limits.start);
    if (!init) return fail(init.error().message);
    if (!init->contains("result") || !(*init)["result"].is_object())
      return fail("it answered initialize with " + loggedArguments(init->value("error", json())));
    if (auto r = process->notify("notifications/initialized", nullptr); !r) return fail(r.error().message);
    Server server{config.name, std::move(config.tools), std::move(process), std::move((*init)["result"])};
    proxy->servers_.emplace(config.name, std::move(server));
  }
  return proxy;
}

HostMcpProxy::~HostMcpProxy() { shutdown(); }

void HostMcpProxy::shutdown() {
  for (auto& [name, server] : servers_)
    if (server.process) server.process->stop();
}

pid_t HostMcpProxy::pid(const std::string& name) const {
  auto it = servers_.find(name);
  return it == servers_.end() ? -1 : it->second.process->pid();
}

json HostMcpProxy::answer(const Server& server, const json& request, const ProxyLogFn& log) const {
  const json& id = request["id"];
  const std::string method = request["method"].get<std::string>();
  const json params = request.value("params", json());
  auto forwarded = [&](const std::string& name, const json& p, std::chrono::milliseconds timeout) -> json {
    auto got = server.process->request(name, p, timeout);
    if (!got) {  // the details (a URL with its query, a host path) are for the user, not the guest
      log(fmt::format("mcp {}: {} failed: {}", server.name, name, got.error().message));
      return errorResponse(id, kInternalError,
                           fmt::format("MCP server {} did not answer (the session log says why)", server.name));
    }
    json out = {{"jsonrpc", "2.0"}, {"id", id}};
    if (got->contains("result")) {
      out["result"] = std::move((*got)["result"]);
    } else {
      json& error = (*got)["error"];
      const bool wellFormed = error.is_object() && error.contains("code") && error["code"].is_number_integer() &&
                              error.contains("message") && error["message"].is_string();
      out["error"] = wellFormed
                         ? std::move(error)
                         : json{{"code", kInternalError},
                                {"message", fmt::format("MCP server {} answered without a result", server.name)}};
    }
    return out;
  };
  if (method == "initialize")
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", initializeResult(server.initialized, params)}};
  if (method == "ping") return {{"jsonrpc", "2.0"}, {"id", id}, {"result", json::object()}};
  if (method == "tools/list") {
    json p = json::object();
    if (params.is_object() && params.contains("cursor") && params["cursor"].is_string()) p["cursor"] = params["cursor"];
    json out = forwarded(method, p, limits_.list);
    if (!out.contains("result")) return out;
    size_t offered = 0, hidden = 0;
    std::vector<std::string> shown;
    if (out["result"].is_object() && out["result"].contains("tools") && out["result"]["tools"].is_array())
      for (const auto& tool : out["result"]["tools"]) {
        ++offered;
        if (tool.is_object() && tool.contains("name") && tool["name"].is_string() &&
            !server.tools.contains(tool["name"].get<std::string>()) && ++hidden <= kLoggedHiddenTools)
          shown.push_back(quotedName(tool["name"].get<std::string>()));
      }
    out["result"] = allowedTools(std::move(out["result"]), server.tools);
    if (++lists_ <= limits_.maxLoggedLists)
      log(fmt::format(
          "mcp {}: tools/list: {} of {} tools given{}", server.name, out["result"]["tools"].size(), offered,
          hidden == 0 ? ""
                      : fmt::format(" (not allowed: {}{})", fmt::join(shown, ", "),
                                    hidden > shown.size() ? fmt::format(" and {} more", hidden - shown.size()) : "")));
    return out;
  }
  if (method == "tools/call") {
    auto refuse = [&](const std::string& tool, const json& arguments, const std::string& why) {
      const unsigned refused = ++refusals_;
      if (refused <= limits_.maxLoggedRefusals)
        log(fmt::format("mcp {}: refused tools/call {} {}: {}", server.name, quotedName(tool),
                        loggedArguments(arguments), why));
      else if (refused == limits_.maxLoggedRefusals + 1)
        log(fmt::format("mcp: more than {} refused calls; the rest are not logged", limits_.maxLoggedRefusals));
    };
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
      refuse("(no name)", params, "no params.name");
      return errorResponse(id, kInvalidParams, "tools/call needs params.name");
    }
    const std::string tool = params["name"].get<std::string>();
    const json arguments = params.value("arguments", json());
    if (!arguments.is_null() && !arguments.is_object()) {
      refuse(tool, arguments, "arguments not an object");
      return errorResponse(id, kInvalidParams, "tools/call's params.arguments must be an object");
    }
    if (!server.tools.contains(tool)) {
      refuse(tool, arguments, "not in the allowlist");
      return errorResponse(id, kInvalidParams,
                           fmt::format("tool '{}' of MCP server {} is not allowed here (airlock config: "
                                       "mcp_servers.{}.tools)",
                                       tool, server.name, server.name));
    }
    json p = {{"name", tool}};
    if (!arguments.is_null()) p["arguments"] = arguments;
    const auto started = std::chrono::steady_clock::now();
    json out = forwarded(method, p, limits_.call);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::string outcome = "ok";
    if (out.contains("error"))
      outcome = "error: " + loggedArguments(out["error"].value("message", json()));
    else if (auto error = out["result"].find("isError");
             out["result"].is_object() && error != out["result"].end() && error->is_boolean() && error->get<bool>())
      outcome = "the tool reported an error";
    log(fmt::format("mcp {}: tools/call {} {}: {} in {:.2f} s", server.name, quotedName(tool),
                    loggedArguments(arguments), outcome, seconds));
    return out;
  }
  return errorResponse(id, kMethodNotFound,
                       fmt::format("method {} is not served: airlock's MCP proxy gives tools only", method));
}

void HostMcpProxy::serve(Fd guest, const ProxyLogFn& log) const {
  // A guest that does not read its answer must not hold the thread (and a
  // slot) for ever.
  const timeval sendTimeout{limits_.guestWriteTimeoutSeconds, 0};
  setsockopt(guest.get(), SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, sizeof sendTimeout);
  if (++inFlight_ > limits_.maxInFlight) {
    --inFlight_;
    respond(guest.get(), 503, "too many MCP requests at once\n", "text/plain");
    return;
  }
  struct Release {
    std::atomic<unsigned>& count;
    ~Release() { --count; }
  } release{inFlight_};
  try {
    serveOne(guest.get(), log);
  } catch (const std::exception& e) {  // a value of an unexpected type: answered, never airlock's end
    respond(guest.get(), 500, std::string("MCP proxy: ") + e.what() + "\n", "text/plain");
  }
}

void HostMcpProxy::serveOne(int fd, const ProxyLogFn& log) const {
  secrets::HttpRequestLimits httpLimits;
  httpLimits.maxBodyBytes = limits_.maxBodyBytes;
  httpLimits.timeoutMs = limits_.requestTimeoutMs;
  auto request = secrets::readHttpRequest(fd, httpLimits);
  if (!request) {
    respond(fd, request.error().code, request.error().message + "\n", "text/plain");
    return;
  }
  std::string path = request->target.substr(0, request->target.find('?'));
  auto it = path.starts_with("/mcp/") ? servers_.find(path.substr(5)) : servers_.end();
  if (it == servers_.end()) {
    respond(fd, 404, "no MCP server at " + path + "\n", "text/plain");
    return;
  }
  if (request->method != "POST") {
    respond(fd, 405, "POST one JSON-RPC message\n", "text/plain", "Allow: POST\r\n");
    return;
  }
  if (jsonDepth(request->body) > kMaxMessageDepth) {
    respondJson(fd, 400,
                errorResponse(nullptr, kInvalidRequest, fmt::format("nested deeper than {} levels", kMaxMessageDepth)));
    return;
  }
  json message = json::parse(request->body, nullptr, false);
  if (message.is_discarded()) {
    respondJson(fd, 400, errorResponse(nullptr, kParseError, "not JSON"));
    return;
  }
  if (!message.is_object() || message.value("jsonrpc", json()) != "2.0") {
    respondJson(fd, 400,
                errorResponse(nullptr, kInvalidRequest,
                              message.is_array() ? "batches are not accepted" : "not a JSON-RPC 2.0 message"));
    return;
  }
  const bool hasId = message.contains("id");
  const bool hasMethod = message.contains("method");
  if (!hasMethod || !hasId) {  // a notification or a response: nothing goes to the server
    if (hasMethod && !message["method"].is_string()) {
      respondJson(fd, 400, errorResponse(nullptr, kInvalidRequest, "method must be a string"));
      return;
    }
    respond(fd, 202, "");
    return;
  }
  const json& id = message["id"];
  if (!(id.is_string() || id.is_number_integer()) || !message["method"].is_string()) {
    respondJson(fd, 400, errorResponse(nullptr, kInvalidRequest, "id must be a string or an integer"));
    return;
  }
  respondJson(fd, 200, answer(it->second, message, log));
}

}  // namespace airlock::mcp
