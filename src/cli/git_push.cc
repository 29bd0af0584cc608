#include "cli/git_push.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cli/host_secrets.h"
#include "common/exit_codes.h"
#include "config/settings.h"
#include "egress/addresses.h"
#include "egress/policy.h"
#include "secrets/credential_broker.h"
#include "secrets/fixed_token.h"

namespace airlock::cli {
namespace {

/// One push's pack at most, held in memory while it is forwarded; two at once.
constexpr size_t kMaxGitPushBytes = size_t{128} << 20;
constexpr unsigned kGitRequestsAtOnce = 2;

/// A host name as --allow-host takes it (egress::parseHostRule), already in
/// lower case, with an optional port; no wildcard (the broker and the SSH
/// rule name one host).
bool validHost(const std::string& host) {
  auto rule = egress::parseHostRule(host);
  if (!rule || rule->pattern.starts_with("*.")) return false;
  return host == (rule->ports.empty() ? rule->pattern : fmt::format("{}:{}", rule->pattern, rule->ports[0]));
}

/// "env:NAME" or "secret:NAME"; the error never holds `source` (a token given by mistake).
Result<> checkTokenSource(const std::string& source) {
  if (config::isTokenSource(source)) return {};
  return failWith(exit_code::kUsage,
                  "--git-token (git_token) takes env:NAME (a variable holding the token) or secret:NAME (airlock secret "
                  "set NAME), never the token itself");
}

}  // namespace

Result<std::string> readGitToken(const HostContext& host, const std::string& source) {
  if (auto r = checkTokenSource(source); !r) return std::unexpected(r.error());
  return readTokenSource(host, source, "--git-token");
}

Result<std::vector<std::string>> gitPushHosts(const config::Settings& settings) {
  const bool token = settings.gitToken && !settings.gitToken->value.empty();
  if (!token && !settings.gitSshAgent.value) {
    if (!settings.gitHosts.empty())
      return failWith(exit_code::kUsage,
                      "--git-host (git_hosts) names where a git token or your SSH agent is used; add --git-token "
                      "env:NAME or --git-ssh-agent (or git_token, git_ssh_agent in your config)");
    return std::vector<std::string>{};
  }
  if (token)
    if (auto r = checkTokenSource(settings.gitToken->value); !r) return std::unexpected(r.error());
  std::vector<std::string> hosts;
  for (const auto& h : settings.gitHosts) hosts.push_back(h.value);
  if (hosts.empty()) hosts.push_back("github.com");
  for (const auto& h : hosts)
    if (!validHost(h))
      return failWith(exit_code::kUsage, "--git-host must be a lower-case host name with an optional :PORT (got '{}')",
                      h);
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

std::string gitBrokerConfig(const std::vector<std::string>& hosts) {
  std::string out;
  for (const auto& h : hosts)
    out += fmt::format("[url \"http://{}:{}/{}/\"]\n\tinsteadOf = https://{}/\n", egress::kGatewayV4,
                       secrets::kGitBrokerPort, h, h);
  return out;
}

Result<> applyGitPush(const HostContext& host, const config::Settings& settings, const std::string& caFile,
                      session::Plan& plan) {
  auto hosts = gitPushHosts(settings);
  if (!hosts) return std::unexpected(hosts.error());
  if (hosts->empty() || !settings.gitToken || settings.gitToken->value.empty()) return {};
  const std::string& source = settings.gitToken->value;
  auto token = readGitToken(host, source);
  if (!token) return std::unexpected(token.error());
  if (plan.machine.egress)
    for (const auto& mapping : plan.machine.egress->hostPorts)
      if (mapping.guestPort == secrets::kGitBrokerPort)
        return failWith(exit_code::kUsage,
                        "--host-port {} takes the gateway port of the git broker (--git-token); "
                        "map another port",
                        mapping.guestPort);
  auto tokens = std::make_shared<secrets::FixedToken>(std::move(*token), source);
  secrets::BrokerRoute route;
  route.pathPrefixes = {"/"};
  route.agent = "git";
  route.auth = secrets::BrokerRoute::Auth::kGitBasic;
  route.hostsInPath = *hosts;
  route.selfUrl = fmt::format("http://{}:{}", egress::kGatewayV4, secrets::kGitBrokerPort);
  secrets::BrokerOptions options;
  options.caFile = caFile;
  options.limits.maxBodyBytes = kMaxGitPushBytes;
  options.maxConcurrent = kGitRequestsAtOnce;
  options.limits.timeoutMs = 600'000;
  auto broker = std::make_shared<secrets::CredentialBroker>(std::move(route), *tokens, options);
  plan.machine.egressNetwork.gatewayServices[secrets::kGitBrokerPort] =
      [broker, tokens](Fd guest, const egress::EgressLogFn& log, const egress::EgressLogFn&) {
        broker->serve(std::move(guest), log);
      };
  auto gitconfig = std::find_if(plan.homeFiles.begin(), plan.homeFiles.end(),
                                [](const session::HomeFile& f) { return f.path == ".gitconfig"; });
  if (gitconfig == plan.homeFiles.end()) gitconfig = plan.homeFiles.insert(plan.homeFiles.end(), {".gitconfig", ""});
  if (!gitconfig->content.empty() && gitconfig->content.back() != '\n') gitconfig->content += '\n';
  gitconfig->content += gitBrokerConfig(*hosts);
  return {};
}

}  // namespace airlock::cli
