#include "cli/run_login.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli/expiry.h"

#include "common/exit_codes.h"
#include "common/paths.h"
#include "egress/addresses.h"
#include "secrets/delivered_login.h"
#include "vm/guest_contract.h"

namespace airlock::cli {
namespace {

/// Where the guest gets the session CA of the broker's HTTPS side (relative to $HOME).
constexpr const char* kBrokerCaFile = ".airlock/broker-ca.pem";

}  // namespace

bool namesVariable(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e == name || e.starts_with(name + "=")) return true;
  return false;
}

Result<std::optional<secrets::SecretInfo>> loginForRun(const HostContext& host, const agents::AgentSpec& spec,
                                                       const std::vector<std::string>& namedEnv) {
  if (spec.login.format.empty()) return std::nullopt;
  for (const auto& name : spec.login.billingEnv)
    if (namesVariable(namedEnv, name)) return std::nullopt;
  HostSecrets index(host, false);
  auto list = index.store().list();
  if (!list) return std::unexpected(list.error());
  for (const auto& s : *list)
    if (s.name == secrets::loginSecretName(spec.name)) return s;
  return std::nullopt;
}

bool billedVariable(const agents::LoginSpec& spec, const std::string& pattern,
                    const std::vector<std::string>& namedEnv) {
  return std::find(spec.billingEnv.begin(), spec.billingEnv.end(), pattern) != spec.billingEnv.end() &&
         !namesVariable(namedEnv, pattern);
}

std::vector<std::string> brokeredHosts(const agents::AgentSpec& spec) {
  if (spec.login.entersVm) return {};
  std::vector<std::string> hosts = spec.egress.modelHosts;
  std::string upstream = spec.login.upstream.substr(spec.login.upstream.find("://") + 3);
  upstream = upstream.substr(0, upstream.find(':'));
  if (!upstream.empty() && std::find(hosts.begin(), hosts.end(), upstream) == hosts.end()) hosts.push_back(upstream);
  return hosts;
}

agents::AgentSpec withLogin(agents::AgentSpec spec, const std::vector<std::string>& namedEnv) {
  if (spec.login.entersVm) {
    // The agent reaches its API itself, at the login's hosts: they are its
    // model hosts (allowed under every egress profile, `locked` included).
    spec.egress.modelHosts = spec.login.hosts;
    for (const auto& host : spec.login.hosts) std::erase(spec.egress.extraHosts, host);
  } else {
    // The model hosts and the login's upstream are the broker's to reach, not the guest's.
    for (const auto& host : brokeredHosts(spec)) std::erase(spec.egress.extraHosts, host);
    spec.egress.modelHosts.clear();
  }
  for (const auto& [name, value] : spec.login.env) spec.env[name] = value;
  for (const auto& [path, content] : spec.login.homeFiles) spec.homeFiles[path] = content;
  std::erase_if(spec.envForward,
                [&](const std::string& pattern) { return billedVariable(spec.login, pattern, namedEnv); });
  return spec;
}

std::string loginLockPath(const HostContext& host, const std::string& agent) {
  return host.dirs.data + "/login-" + agent + ".lock";
}

std::string deliveryText(const agents::LoginSpec& spec) {
  return spec.deliveredInVariable() ? "as $" + spec.tokenEnv : "on a tmpfs, read back when it exits";
}

Result<FileLock> lockLogin(const HostContext& host, const std::string& agent) {
  if (auto r = makeDirs(host.dirs.data, 0700); !r) return std::unexpected(r.error());
  return FileLock::acquire(loginLockPath(host, agent), agent + "'s login", nullptr);
}

Result<std::unique_ptr<RunLogin>> RunLogin::open(const HostContext& host, const agents::AgentSpec& spec,
                                                 const std::vector<std::string>& namedEnv) {
  auto stored = loginForRun(host, spec, namedEnv);
  if (!stored) return std::unexpected(stored.error());
  if (!*stored) return nullptr;
  if (const auto& end = (*stored)->expiresAt; end && *end <= nowSeconds(host))
    return failWith(exit_code::kHostNotReady,
                    "the stored {} login expired {}; store a new token: airlock login {} --with-token", spec.name,
                    relativeTime(end, nowSeconds(host)), spec.name);
  std::unique_ptr<RunLogin> run(new RunLogin());
  run->expiresAt_ = (*stored)->expiresAt;
  run->spec_ = spec.login;
  run->agent_ = spec.name;
  run->secrets_ = std::make_unique<HostSecrets>(host, true);
  run->lockPath_ = loginLockPath(host, spec.name);
  run->clock_ = host.clock;
  if (spec.login.entersVm) {
    // No broker and no refresh on the host: the agent refreshes in the VM.
    auto value = run->secrets_->store().get(secrets::loginSecretName(spec.name));
    if (!value) return std::unexpected(value.error());
    if (!*value)
      return failWith(exit_code::kHostNotReady, "the {} login was removed meanwhile; run `airlock login {}`", spec.name,
                      spec.name);
    auto parsed = secrets::parseLogin(**value);
    if (!parsed) return std::unexpected(parsed.error());
    if (parsed->format != spec.login.format)
      return failWith(exit_code::kUsage,
                      "the stored {} login is a {} login, not the {} this agent uses; run `airlock "
                      "login {}` again",
                      spec.name, parsed->format, spec.login.format, spec.name);
    run->delivered_ = std::move(*parsed);
    return run;
  }
  run->tokens_ = std::make_unique<secrets::LoginTokens>(
      run->secrets_->store(), spec.name,
      secrets::RefreshEndpoint{spec.login.refreshUrl, spec.login.clientId, spec.login.clientSecret},
      secrets::curlPoster(host.getEnv("SSL_CERT_FILE")), run->lockPath_, *host.clock);
  if (auto r = run->tokens_->load(); !r) return std::unexpected(r.error());
  // A login made for another API is never sent to this spec's upstream.
  if (run->tokens_->login().format != spec.login.format)
    return failWith(exit_code::kUsage,
                    "the stored {} login is a {} login, not the {} this agent uses; run `airlock "
                    "login {}` again",
                    spec.name, run->tokens_->login().format, spec.login.format, spec.name);
  // A login that cannot be refreshed fails here, before a VM boots for
  // nothing (the refresh, when due, happens now instead of at the first request).
  if (auto token = run->tokens_->token(); !token)
    return std::unexpected(withCode(token.error(), exit_code::kHostNotReady));
  secrets::BrokerOptions options;
  options.caFile = host.getEnv("SSL_CERT_FILE");
  run->broker_ = std::make_shared<secrets::CredentialBroker>(
      secrets::BrokerRoute{spec.login.upstream, spec.login.paths, spec.name}, *run->tokens_, options);
  if (!spec.login.tlsCaEnv.empty()) {
    auto tls = secrets::SessionTls::create(egress::kGatewayV4);
    if (!tls) return std::unexpected(tls.error());
    run->tls_ = std::move(*tls);
  }
  return run;
}

std::string RunLogin::expiryWarning() const {
  const int64_t now = nowSeconds(*clock_);
  if (!expiresAt_ || *expiresAt_ - now >= kLoginExpiryWarning) return "";
  return fmt::format("your {} login expires {}: store a new token with `airlock login {} --with-token`", agent_,
                     relativeTime(expiresAt_, now), agent_);
}

std::optional<std::string> RunLogin::guestCredentialFile() const {
  if (spec_.entersVm) return std::nullopt;
  if (login().kind != secrets::AgentLogin::Kind::kSubscription) return std::nullopt;
  return secrets::placeholderCredentialFile(login());
}

void RunLogin::applyToEnvironment(agents::EnvMap& env, const std::vector<std::string>& namedEnv) const {
  for (const auto& name : spec_.billingEnv)
    if (!namesVariable(namedEnv, name)) env.erase(name);
  if (spec_.entersVm) {
    if (spec_.deliveredInVariable()) env[spec_.tokenEnv] = delivered_.accessToken;
    return;
  }
  env[spec_.baseUrlEnv] = fmt::format("http://{}:{}", egress::kGatewayV4, secrets::kBrokerPort);
  if (tls_) {
    env[spec_.tlsBaseUrlEnv] = fmt::format("https://{}:{}", egress::kGatewayV4, secrets::kBrokerTlsPort);
    env[spec_.tlsCaEnv] = std::string(guest::kAgentHome) + "/" + kBrokerCaFile;
  }
  if (spec_.tokenEnv.empty()) return;
  if (guestCredentialFile())
    env.erase(spec_.tokenEnv);
  else
    env[spec_.tokenEnv] = secrets::placeholderToken(login());
}

Result<> RunLogin::applyToPlan(session::Plan& plan) const {
  if (spec_.entersVm) {
    if (spec_.deliveredInVariable()) return {};  // in its variable (applyToEnvironment)
    auto file = secrets::credentialFile(delivered_);
    if (!file) return failWith(exit_code::kInternal, "a {} login has no credential file to deliver", delivered_.format);
    session::DeliveredCredential credential;
    credential.path = spec_.file;
    credential.content = std::move(*file);
    credential.maxBytes = secrets::kMaxCredentialFileBytes;
    credential.keptNotice = "the agent refreshed its login in the VM; the new one is stored";
    credential.returned = [secrets = secrets_.get(), agent = agent_, delivered = delivered_, lock = lockPath_,
                           clock = clock_](std::string_view content, std::string_view) {
      return secrets::keepReturnedLogin(secrets->store(), agent, delivered, content, lock, *clock);
    };
    plan.credential = std::move(credential);
    return {};
  }
  if (plan.machine.egress)
    for (const auto& mapping : plan.machine.egress->hostPorts)
      if (mapping.guestPort == secrets::kBrokerPort || (tls_ && mapping.guestPort == secrets::kBrokerTlsPort))
        return failWith(exit_code::kUsage,
                        "--host-port {} takes the gateway port of the {} login's broker; map "
                        "another port, or log out first (airlock logout {})",
                        mapping.guestPort, agent_, agent_);
  if (auto file = guestCredentialFile()) plan.homeFiles.push_back({spec_.file, *file});
  if (tls_) plan.homeFiles.push_back({kBrokerCaFile, tls_->caPem()});
  if (!spec_.accountFile.empty() && !login().accountJson.empty()) {
    auto seed = std::find_if(plan.seedFiles.begin(), plan.seedFiles.end(),
                             [&](const session::HomeFile& f) { return f.path == spec_.accountFile; });
    if (seed == plan.seedFiles.end()) seed = plan.seedFiles.insert(plan.seedFiles.end(), {spec_.accountFile, ""});
    seed->content = secrets::withAccount(seed->content, spec_.accountKey, login());
  }
  plan.machine.egressNetwork.gatewayServices[secrets::kBrokerPort] =
      [broker = broker_](Fd guest, const egress::EgressLogFn& log, const egress::EgressLogFn&) {
        broker->serve(std::move(guest), log);
      };
  if (tls_)
    plan.machine.egressNetwork.gatewayServices[secrets::kBrokerTlsPort] =
        [broker = broker_, tls = tls_](Fd guest, const egress::EgressLogFn& log, const egress::EgressLogFn&) {
          tls->serve(std::move(guest), [&](Fd plain) { broker->serve(std::move(plain), log); });
        };
  return {};
}

}  // namespace airlock::cli
