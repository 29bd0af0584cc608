#include "cli/kept_out.h"

#include <fcntl.h>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "workspace/relpath.h"

namespace airlock::cli {

namespace ws = airlock::workspace;

Result<ws::SnapshotResult> keptOut(const std::string& workspace, const config::Settings& settings, bool readFiles) {
  ws::IgnoreRules rules;
  Fd root(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (auto r = rules.loadFile(root.get()); !r)
    return failWith(withCode(r.error(), exit_code::kHostNotReady).code, "{}", r.error().message);
  for (const auto& e : settings.excludes) rules.addPattern(e.value);
  return ws::findKeptOut(workspace, rules, readFiles);
}

std::string keptOutText(const ws::SnapshotResult& res, bool listed) {
  std::string summary = ws::keptOutSummary(res);
  std::string out = fmt::format("  {:<14} {}\n", "kept out", summary.empty() ? "nothing" : summary);
  if (!listed) {
    out += fmt::format("  {:<14} {}\n", "",
                       "(names, ignores and hard links only; --excluded also reads every file for private keys and "
                       "git credentials, and lists the paths)");
    return out;
  }
  for (const auto& k : res.excluded)
    out += fmt::format("  {:<14} {}  ({})\n", "", ws::displayPath(k.path), ws::keptOutReasonText(k.reason));
  for (const auto& p : res.gitCredentialsStripped)
    out += fmt::format("  {:<14} {}  (copied without its credentials and commands)\n", "", ws::displayPath(p));
  return out;
}

nlohmann::json keptOutJson(const ws::SnapshotResult& res, bool listed) {
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& k : res.excluded) {
    auto& n = counts[ws::keptOutReasonKey(k.reason)];
    n = n.is_null() ? 1 : n.get<int>() + 1;
  }
  nlohmann::json j = {{"summary", ws::keptOutSummary(res)},
                      {"files_read", listed},
                      {"count", res.excluded.size()},
                      {"by_reason", counts},
                      {"git_configs_stripped", res.gitCredentialsStripped.size()}};
  if (listed) {
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& k : res.excluded) paths.push_back({{"path", k.path}, {"reason", ws::keptOutReasonKey(k.reason)}});
    j["paths"] = std::move(paths);
    j["git_configs"] = res.gitCredentialsStripped;
  }
  return j;
}

}  // namespace airlock::cli
