#pragma once
// `airlock login AGENT` on a terminal (issue 15, item 2): the agent's own
// login (LoginSpec::loginCommand: `codex login --device-auth`) run in a VM
// of its image, attached to this terminal. The VM reaches only the
// login's hosts (LoginSpec::loginHosts), gets no workspace and none of the
// host's variables, and keeps the agent's home on a tmpfs; when the login
// exits, its credential file is read back (capped, like a delivered one)
// and checked like --from-host's before the VM stops.

#include "agents/agent_spec.h"
#include "common/error.h"
#include "common/host_context.h"
#include "secrets/agent_login.h"

namespace airlock::cli {

/// The login `spec`'s agent made in the VM: the credential fields of its
/// file (secrets::loginFromCredentialFile). `quiet`: no progress lines.
/// Errors: the spec has no login command (64), no terminal (64), the image
/// or the VM failed (their codes), the login exited without writing its
/// file (65, with its exit code), the file is not a login (64).
Result<secrets::AgentLogin> loginInVm(const HostContext& host, const agents::AgentSpec& spec, bool quiet);

}  // namespace airlock::cli
