#include "cli/host_secrets.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/visible_text.h"
#include "config/settings.h"

namespace airlock::cli {
namespace {

/// Why there is no session bus to ask ("" when there is one). GLib would
/// otherwise try to autolaunch one: DBUS_SESSION_BUS_ADDRESS, or systemd's
/// $XDG_RUNTIME_DIR/bus socket when it is the user's own (GLib's own test).
std::string noSessionBus(const HostContext& host) {
  if (!host.getEnv("DBUS_SESSION_BUS_ADDRESS").empty()) return "";
  const std::string runtime = host.getEnv("XDG_RUNTIME_DIR");
  struct stat st {};
  if (!runtime.empty() && ::lstat((runtime + "/bus").c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
      st.st_uid == ::geteuid())
    return "";
  return "no session bus (DBUS_SESSION_BUS_ADDRESS is unset)";
}

}  // namespace

std::string secretStoreChoiceError(const HostContext& host) {
  auto it = host.env.find("AIRLOCK_SECRET_STORE");
  if (it == host.env.end() || it->second.empty() || it->second == "file") return "";
  return "AIRLOCK_SECRET_STORE=" + visibleText(it->second) +
         " names no secret store: set it to file (0600 files under $XDG_DATA_HOME/airlock/secrets), or unset it "
         "(the Secret Service when a session bus has one, else the file store)";
}

HostSecrets::HostSecrets(const HostContext& host, bool values) : file_(host.dirs.data + "/secrets") {
  std::map<std::string, secrets::SecretBackend*> backends = {{file_.id(), &file_}};
  preferred_ = &file_;
  if (host.getEnv("AIRLOCK_SECRET_STORE") == "file") {
    serviceProblem_ = "AIRLOCK_SECRET_STORE=file";
  } else if (!values) {
    serviceProblem_ = "not contacted";
  } else if (serviceProblem_ = noSessionBus(host); serviceProblem_.empty()) {
    if (auto service = secrets::SecretServiceBackend::connect(); service) {
      service_ = std::move(*service);
      backends[service_->id()] = service_.get();
      preferred_ = service_.get();
    } else {
      serviceProblem_ = service.error().message;
    }
  }
  store_.emplace(host.dirs.data + "/secrets.json", std::move(backends), *preferred_, *host.clock);
}

std::string HostSecrets::where() const {
  if (preferred_->id() != "file") return preferred_->describe();
  return "file store " + preferred_->describe() + (serviceProblem_.empty() ? "" : " (" + serviceProblem_ + ")");
}

Result<std::string> readTokenSource(const HostContext& host, const std::string& source, const std::string& what) {
  if (!config::isTokenSource(source))
    return failWith(exit_code::kUsage, "{} takes env:NAME or secret:NAME, never the token itself", what);
  if (source.starts_with("env:")) {
    const std::string name = source.substr(4);
    std::string value = host.getEnv(name);
    if (value.empty())
      return failWith(exit_code::kUsage,
                      "{} {}: {} is not set in this environment; export it, or store the token with `airlock secret "
                      "set NAME` and use secret:NAME",
                      what, source, name);
    return value;
  }
  const std::string name = source.substr(7);
  HostSecrets secrets(host, true);
  auto value = secrets.store().get(name);
  if (!value) return failWith(exit_code::kUsage, "{} {}: {}", what, source, value.error().message);
  if (!*value || (*value)->empty())
    return failWith(exit_code::kUsage, "{} {}: no secret named {}; store it with `airlock secret set {}`", what, source,
                    name, name);
  return std::move(**value);
}

}  // namespace airlock::cli
