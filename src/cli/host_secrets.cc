#include "cli/host_secrets.h"

#include <sys/stat.h>

namespace airlock::cli {
namespace {

/// Whether a session bus is there to ask (GLib would otherwise try to
/// autolaunch one): DBUS_SESSION_BUS_ADDRESS, or systemd's
/// $XDG_RUNTIME_DIR/bus socket.
bool hasSessionBus(const HostContext& host) {
  if (!host.getEnv("DBUS_SESSION_BUS_ADDRESS").empty()) return true;
  const std::string runtime = host.getEnv("XDG_RUNTIME_DIR");
  struct stat st {};
  return !runtime.empty() && ::stat((runtime + "/bus").c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

HostSecrets::HostSecrets(const HostContext& host) : file_(host.dirs.data + "/secrets") {
  std::map<std::string, secrets::SecretBackend*> backends = {{file_.id(), &file_}};
  preferred_ = &file_;
  if (!hasSessionBus(host)) {
    serviceProblem_ = "no session bus (DBUS_SESSION_BUS_ADDRESS is unset)";
  } else if (auto service = secrets::SecretServiceBackend::connect(); service) {
    service_ = std::move(*service);
    backends[service_->id()] = service_.get();
    preferred_ = service_.get();
  } else {
    serviceProblem_ = service.error().message;
  }
  store_.emplace(host.dirs.data + "/secrets.json", std::move(backends), *preferred_, *host.clock);
}

}  // namespace airlock::cli
