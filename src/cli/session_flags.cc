#include "cli/session_flags.h"

#include "common/exit_codes.h"
#include "vm/machine.h"

namespace airlock::cli {

Result<session::ReviewPolicy> chooseReview(const HostContext& host, const std::string& mode, bool acceptFailed) {
  session::ReviewPolicy policy;
  policy.modeName = mode;
  if (mode.empty()) {
    if (!host.terminal.controlling)
      return failWith(exit_code::kUsage, "no terminal for the interactive review: pass --review=auto (accept all but "
                      "held-back paths) or --review=none (keep every change in the session for later)");
    policy.modeName = "interactive";
  }
  auto parsed = workspace::parseReviewMode(policy.modeName);
  if (!parsed) return std::unexpected(withCode(parsed.error(), exit_code::kUsage));
  policy.mode = *parsed;
  if (policy.mode == workspace::ReviewMode::Interactive && !host.terminal.controlling)
    return failWith(exit_code::kUsage, "--review=interactive needs a terminal; pass --review=auto or --review=none");
  bool byPolicy = policy.mode == workspace::ReviewMode::Auto || policy.mode == workspace::ReviewMode::All;
  if (acceptFailed && !byPolicy)
    return failWith(exit_code::kUsage, "--accept-failed applies to --review=auto or --review=all only");
  policy.acceptFailed = acceptFailed;
  return policy;
}

bool usePty(const HostContext& host, const std::string& tty) {
  return tty == "always" || (tty == "auto" && host.terminal.stdinTty && host.terminal.stdoutTty);
}

Result<std::vector<std::pair<std::string, std::string>>> envFlags(const HostContext& host,
                                                                  const std::vector<std::string>& values,
                                                                  const std::string& flag) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : values) {
    auto eq = e.find('=');
    if (eq == 0) return failWith(exit_code::kUsage, "{} {}: the variable name is empty", flag, e);
    if (eq != std::string::npos) {
      out.emplace_back(e.substr(0, eq), e.substr(eq + 1));
      continue;
    }
    // NAME forwards the host's value, like docker run -e NAME.
    auto it = host.env.find(e);
    if (it == host.env.end())
      return failWith(exit_code::kUsage, "{} {}: not set in your environment; use {} {}=VALUE", flag, e, flag, e);
    out.emplace_back(e, it->second);
  }
  return out;
}

session::SandboxLauncher launchMachine(const HostContext& host) {
  return [&host](const vm::LaunchOptions& options) -> Result<std::unique_ptr<vm::Sandbox>> {
    auto machine = vm::Machine::launch(host, options);
    if (!machine) return std::unexpected(machine.error());
    return std::unique_ptr<vm::Sandbox>(std::move(*machine));
  };
}

}  // namespace airlock::cli
