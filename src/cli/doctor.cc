// `airlock doctor [--json]`: checks the host, one line per check, and says
// what to do about each problem. Exits 65 (host not ready) when a check fails.

#include "cli/doctor.h"

#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/expiry.h"
#include "cli/host_secrets.h"
#include "common/exit_codes.h"
#include "preflight/doctor.h"
#include "session/session_list.h"

namespace airlock::cli {
namespace {

/// Where `airlock secret` keeps values on this host; a file store others
/// could read or change; secrets whose store is not reachable now (stored
/// in the Secret Service, used without a session bus); secrets past their
/// stated end (a login's `--expires`: runs refuse it).
preflight::CheckResult secretsCheck(const HostContext& host) {
  HostSecrets secrets(host, true);
  auto list = secrets.store().list();
  if (!list) return {"secrets", preflight::CheckStatus::kFail, list.error().message, "move the index file away"};
  if (auto audit = secrets.fileStore().audit(); !audit)
    return {"secrets", preflight::CheckStatus::kFail, audit.error().message,
            "fix the permissions as the line says, or set XDG_DATA_HOME to a directory only you can change"};
  size_t unreachable = 0;
  for (const auto& s : *list) unreachable += s.backend != "file" && s.backend != secrets.preferred().id();
  std::string where = secrets.serviceProblem().empty()
                          ? "new secrets go to the " + secrets.preferred().describe()
                          : "new secrets go to the file store " + secrets.preferred().describe() + " (" +
                                secrets.serviceProblem() + ")";
  std::vector<std::string> expired;
  for (const auto& s : *list)
    if (s.expiresAt && *s.expiresAt <= nowSeconds(host)) expired.push_back(s.name);
  if (!expired.empty())
    return {"secrets", preflight::CheckStatus::kWarn, fmt::format("{}; expired: {}", where, fmt::join(expired, ", ")),
            expired[0].starts_with("login.")
                ? fmt::format("store a new token: airlock login {} --with-token (runs refuse an expired login)",
                              expired[0].substr(6))
                : fmt::format("set it again: airlock secret set {} --expires DATE, or airlock secret rm {}", expired[0],
                              expired[0])};
  if (unreachable > 0)
    return {"secrets", preflight::CheckStatus::kWarn,
            fmt::format("{}; {} secret(s) are in a store that is not reachable now", where, unreachable),
            "run airlock in your desktop session (its session bus and unlocked keyring), or set them again here "
            "(airlock secret set NAME)"};
  return {"secrets", preflight::CheckStatus::kOk, fmt::format("{}; {} stored", where, list->size()), ""};
}

}  // namespace

preflight::CheckResult deadSessionsCheck(const std::string& stateDir) {
  std::vector<std::string> dead;
  for (const auto& e : session::listSessions(stateDir))
    if (e.state == session::SessionState::kDead) dead.push_back(e.name);
  if (dead.empty()) return {"dead sessions", preflight::CheckStatus::kOk, "none", ""};
  return {"dead sessions", preflight::CheckStatus::kWarn,
          fmt::format("{} session(s) whose airlock process died: {}", dead.size(), fmt::join(dead, ", ")),
          fmt::format("airlock review {} reviews what it left (a detached one's changes too), then airlock rm {}",
                      dead[0], dead[0])};
}

namespace {

int runDoctorCommand(const HostContext& host, bool json) {
  preflight::SystemHostProbe probe;
  auto results = preflight::runDoctor(probe, host.dirs.cache, host.dirs.state);
  results.push_back(deadSessionsCheck(host.dirs.state));
  results.push_back(secretsCheck(host));
  bool failed = false;
  for (const auto& r : results) failed = failed || r.status == preflight::CheckStatus::kFail;
  if (json) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& r : results)
      checks.push_back(
          {{"check", r.name}, {"status", preflight::statusName(r.status)}, {"detail", r.detail}, {"fix", r.fix}});
    nlohmann::json out = {{"ok", !failed}, {"checks", checks}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    bool color = host.terminal.stdoutTty;
    for (const auto& r : results) {
      const char* status = preflight::statusName(r.status);
      const char* on = !color                                      ? ""
                       : r.status == preflight::CheckStatus::kOk   ? "\033[32m"
                       : r.status == preflight::CheckStatus::kWarn ? "\033[33m"
                                                                   : "\033[31m";
      std::printf("%s%-4s%s  %-16s %s\n", on, status, color ? "\033[0m" : "", r.name.c_str(), r.detail.c_str());
      if (!r.fix.empty()) std::printf("      %-16s fix: %s\n", "", r.fix.c_str());
    }
  }
  return failed ? exit_code::kHostNotReady : 0;
}

}  // namespace

void addDoctorCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("doctor", "Check that this host can run airlock, and say how to fix what is missing");
  cmd->footer("Each line is ok, warn or fail; the exit code is 65 only when a check fails.");
  cmd->add_flag("--json", *json, "Machine-readable output");
  cmd->callback([json, &exitCode, &host] { exitCode = runDoctorCommand(host, *json); });
}

}  // namespace airlock::cli
