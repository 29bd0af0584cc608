#pragma once
// The account login a run uses (issue 15): the agent's stored login, kept
// on the host, with the credential broker that puts its real token on the
// wire. The guest gets placeholders only: a credential file whose tokens
// say "airlock-placeholder", and its base URL pointing at the broker on the
// gateway. The model API then needs no egress allowance in the guest.

#include <memory>
#include <string>
#include <vector>

#include "agents/agent_env.h"
#include "agents/agent_spec.h"
#include "cli/host_secrets.h"
#include "common/error.h"
#include "common/host_context.h"
#include "secrets/agent_login.h"
#include "secrets/credential_broker.h"
#include "secrets/login_tokens.h"
#include "session/plan.h"

namespace airlock::cli {

/// True when `env` (--env NAME or NAME=VALUE values) names `name`.
bool namesVariable(const std::vector<std::string>& env, const std::string& name);

/// One run's login and broker; alive for the whole run (the broker serves
/// the guest from the egress proxy's threads).
class RunLogin {
 public:
  /// The stored login of `spec`'s agent. nullptr when the spec has no
  /// login, none is stored, or `namedEnv` (--env) names one of the spec's
  /// billing variables (then the API key is used, by value, as asked).
  /// Errors: the store cannot be read, the stored login is not airlock's.
  static Result<std::unique_ptr<RunLogin>> open(const HostContext& host, const agents::AgentSpec& spec,
                                                const std::vector<std::string>& namedEnv);
  RunLogin(const RunLogin&) = delete;
  RunLogin& operator=(const RunLogin&) = delete;

  const secrets::AgentLogin& login() const { return tokens_->login(); }
  /// "subscription (max)" or "long-lived token".
  std::string describe() const;

  /// The spec as the run uses it: no model hosts in the egress allowlist
  /// (the broker reaches them from the host).
  agents::AgentSpec brokeredSpec(agents::AgentSpec spec) const;
  /// The agent's environment with the login: the billing variables removed
  /// unless `namedEnv` names them, the base URL at the broker, a long-lived
  /// token's variable set to a placeholder.
  void applyToEnvironment(agents::EnvMap& env, const std::vector<std::string>& namedEnv) const;
  /// The placeholder credential file in $HOME (a subscription login) and
  /// the broker at the gateway. Errors (64): a --host-port mapping takes
  /// the broker's gateway port.
  Result<> applyToPlan(session::Plan& plan) const;

 private:
  RunLogin() = default;
  agents::LoginSpec spec_;
  std::string agent_;
  std::unique_ptr<HostSecrets> secrets_;
  std::unique_ptr<secrets::LoginTokens> tokens_;
  std::shared_ptr<secrets::CredentialBroker> broker_;
};

}  // namespace airlock::cli
