#pragma once
// The account login a run uses (issue 15): the agent's stored login, kept
// on the host, with the credential broker that puts its real token on the
// wire. The guest gets placeholders only: a credential file whose tokens
// say "airlock-placeholder", and its base URL pointing at the broker on the
// gateway. The model API then needs no egress allowance in the guest.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/agent_env.h"
#include "agents/agent_spec.h"
#include "cli/host_secrets.h"
#include "common/error.h"
#include "common/file_lock.h"
#include "common/host_context.h"
#include "secrets/agent_login.h"
#include "secrets/credential_broker.h"
#include "secrets/login_tokens.h"
#include "secrets/session_tls.h"
#include "session/plan.h"

namespace airlock::cli {

/// The lock file every change of `agent`'s stored login is made under
/// (a broker's refresh, a login read back from the VM, login, logout).
std::string loginLockPath(const HostContext& host, const std::string& agent);

/// That lock, held (its directory made first). Errors: it cannot be made.
Result<FileLock> lockLogin(const HostContext& host, const std::string& agent);

/// How a login that enters the VM (LoginSpec::entersVm) goes in, for
/// messages: "as $ACME_TOKEN" (a token login), else "on a tmpfs, read back
/// when it exits".
std::string deliveryText(const agents::LoginSpec& spec);

/// True when `env` (--env NAME or NAME=VALUE values) names `name`.
bool namesVariable(const std::vector<std::string>& env, const std::string& name);

/// What the index knows of the login a run of `spec` would use (no keyring
/// is contacted, no value read): nullopt when the spec has no login, none
/// is stored, or `namedEnv` (--env) names one of the spec's billing
/// variables (then the API key is used, by value, as asked).
Result<std::optional<secrets::SecretInfo>> loginForRun(const HostContext& host, const agents::AgentSpec& spec,
                                                       const std::vector<std::string>& namedEnv);

/// True when a brokered run leaves variable `pattern` (an env_forward
/// entry) out: one of `spec`'s billing variables, not named in `namedEnv`.
bool billedVariable(const agents::LoginSpec& spec, const std::string& pattern,
                    const std::vector<std::string>& namedEnv);

/// The hosts a brokered run of `spec` reaches through the broker: the
/// model hosts and the login's upstream host (the guest's lookups of them
/// are answered NXDOMAIN and logged as brokered, not blocked). None for a
/// login that enters the VM.
std::vector<std::string> brokeredHosts(const agents::AgentSpec& spec);

/// The spec as a run with its login uses it: the login's env and home
/// files over the spec's, and the billing variables not forwarded unless
/// `namedEnv` names them. Brokered: no model hosts or upstream host in the
/// egress allowlist (the broker reaches them from the host). Entering the
/// VM: the login's hosts are the model hosts (allowed under every profile).
agents::AgentSpec withLogin(agents::AgentSpec spec, const std::vector<std::string>& namedEnv);

/// One run's login and broker; alive for the whole run (the broker serves
/// the guest from the egress proxy's threads). A login that enters the VM
/// (LoginSpec::entersVm) has no broker: the runner delivers its file and
/// hands back what the agent left there.
class RunLogin {
 public:
  /// How long before a login's stated end runs warn of it (7 days, in seconds).
  static constexpr int64_t kLoginExpiryWarning = 7 * 24 * 3600;

  /// The stored login of `spec`'s agent, refreshed now when it expires
  /// soon; nullptr when loginForRun() has none. Errors: the store cannot be
  /// read, the stored login is not airlock's, it needed a refresh that
  /// failed, or its stated end is past (exit code 65, naming `airlock login
  /// AGENT`).
  static Result<std::unique_ptr<RunLogin>> open(const HostContext& host, const agents::AgentSpec& spec,
                                                const std::vector<std::string>& namedEnv);
  RunLogin(const RunLogin&) = delete;
  RunLogin& operator=(const RunLogin&) = delete;

  const secrets::AgentLogin& login() const { return tokens_ ? tokens_->login() : delivered_; }
  /// "subscription (max)", "account" or "long-lived token" (secrets::describeLogin).
  std::string describe() const { return secrets::describeLogin(login()); }
  /// True when the login's tokens enter the VM (LoginSpec::entersVm).
  bool entersVm() const { return spec_.entersVm; }
  /// How it enters the VM, for messages (deliveryText).
  std::string delivery() const { return deliveryText(spec_); }
  /// A warning when the login's stated end (`airlock login --expires`, or
  /// a token's own) is less than kLoginExpiryWarning away; "" otherwise.
  std::string expiryWarning() const;

  /// The agent's environment with the login: the billing variables removed
  /// unless `namedEnv` names them, the base URL at the broker (and its
  /// HTTPS URL and CA file, for an agent that needs them), the token
  /// variable set to a placeholder unless the guest gets a placeholder
  /// credential file instead. A token login that enters the VM: the token
  /// variable set to the real token (by value, as a forwarded key would be).
  void applyToEnvironment(agents::EnvMap& env, const std::vector<std::string>& namedEnv) const;
  /// The placeholder credential file in $HOME (a subscription login of a
  /// format that has one), the account merged into the seed of the spec's
  /// account file, the broker at the gateway (and its HTTPS side, with the
  /// session CA's PEM in $HOME). A login that enters the VM: its real
  /// credential file (Plan::credential), kept again when the agent
  /// refreshed it (secrets::keepReturnedLogin). Errors (64): a --host-port
  /// mapping takes a gateway port of the broker.
  Result<> applyToPlan(session::Plan& plan) const;

 private:
  RunLogin() = default;
  /// The placeholder credential file the guest gets; nullopt when its
  /// placeholder goes in the token variable.
  std::optional<std::string> guestCredentialFile() const;
  agents::LoginSpec spec_;
  std::string agent_;
  std::unique_ptr<HostSecrets> secrets_;
  std::unique_ptr<secrets::LoginTokens> tokens_;  ///< null when the login enters the VM
  secrets::AgentLogin delivered_;                 ///< the login that enters the VM
  std::string lockPath_;                          ///< the lock file of the login's refreshes
  const Clock* clock_ = nullptr;                  ///< the host's (never null once opened)
  std::optional<int64_t> expiresAt_;              ///< the login's stated end (Unix seconds)
  std::shared_ptr<secrets::CredentialBroker> broker_;
  std::shared_ptr<secrets::SessionTls> tls_;  ///< the broker's HTTPS side; null when the agent needs none
};

}  // namespace airlock::cli
