#pragma once
// A login that enters the VM (issue 15, item 4; agent_login.h entersVm:
// OpenCode's ChatGPT login, whose endpoint the broker cannot take over).
// The agent gets its real credential file, may refresh it inside the VM,
// and OpenAI then rotates the refresh token: the delivered copy is spent.
// So the file is read back when the agent exits and kept in its place when
// it is the same login, refreshed; a stale copy is never delivered again.

#include <string>
#include <string_view>

#include "common/error.h"
#include "secrets/agent_login.h"
#include "secrets/secret_store.h"

namespace airlock::secrets {

/// The furthest a returned login's expiry may be from now (30 days;
/// ChatGPT's access tokens live 10).
inline constexpr int64_t kMaxReturnedLifetimeMs = 30LL * 86'400'000;

/// Decides on `returned`, the credential file the agent left in the VM,
/// against `delivered`, the login it was given: under the lock file
/// `lockPath` (shared with every session of the login), stores it as
/// `agent`'s login when it is the same format and account with a later
/// expiry than the delivered login, at most kMaxReturnedLifetimeMs from
/// `clock`'s now, and the store still holds the delivered login. False:
/// the tokens are unchanged. Errors (the stored login stays): not the
/// format's file (the guest is untrusted: same checks as --from-host),
/// another account, new tokens with no later expiry or one too far away,
/// the stored login removed or changed meanwhile (a new login, another
/// session's refresh), the store cannot be read or written.
Result<bool> keepReturnedLogin(SecretStore& store, std::string_view agent, const AgentLogin& delivered,
                               std::string_view returned, const std::string& lockPath, const Clock& clock);

}  // namespace airlock::secrets
