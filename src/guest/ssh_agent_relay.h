#pragma once
// The guest end of --git-ssh-agent: a unix socket at guest::kSshAgentSocket
// (SSH_AUTH_SOCK of the agent's processes) whose requests go, one at a
// time, over the virtio-serial port guest::kSshAgentPort to the host's
// filter (secrets/ssh_agent_filter.h), and whose replies come back the same
// way. The agent protocol is strictly request then reply, so one request is
// in flight at a time and the others wait; a message is forwarded only
// whole (u32 length, at most 256 KiB), so the port's stream never falls out
// of step whatever a client sends. It decides nothing: the host does.
// libc only.

#include <string>

namespace airlock::guest {

/// Creates the socket, open to every process in the guest (the agent may run
/// as any uid, and everything in the VM is the guest's anyway: what a
/// request may do is decided on the host), opens `portDevice`
/// (/dev/vportNpM) and forks the relay. Returns false with a message when
/// something could not be set up.
bool startSshAgentRelay(const std::string& portDevice, std::string& error);

}  // namespace airlock::guest
