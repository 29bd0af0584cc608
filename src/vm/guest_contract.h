#pragma once
// The guest contract (DESIGN.md, "Guest contract"): the facts host and guest
// must agree on, in one place, included by both (airlock-init in src/guest,
// the image builder, the session runner). The guest's network addresses are
// in egress/addresses.h, also shared with airlock-init. Header only, std only.

#include <cstdint>

namespace airlock::guest {

inline constexpr const char* kAgentUser = "agent";      ///< the user (and group) name images are built with
inline constexpr uint32_t kAgentUid = 1000;             ///< the agent user (and group) airlock-init runs the agent as
inline constexpr const char* kAgentHome = "/home/agent";  ///< its home, on the scratch disk
inline constexpr const char* kWorkspace = "/workspace";   ///< where the workspace is mounted
/// PATH of the agent and of commands whose image sets none.
inline constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Where a login that has to enter the VM is written (session::Plan::credential):
/// on the tmpfs airlock-init mounts at /run, never the scratch disk.
inline constexpr const char* kCredentialDir = "/run/airlock/credentials";
/// The CA bundle the agent's TLS clients are pointed at when the user adds
/// certificates (session::Plan::extraCaCertificates): the image's own
/// bundle (Debian's /etc/ssl/certs/ca-certificates.crt) and the extra ones.
inline constexpr const char* kCaBundle = "/home/agent/.airlock/ca-bundle.pem";
/// Where an image keeps its CA bundle (Debian's layout, which airlock's images use).
inline constexpr const char* kSystemCaBundle = "/etc/ssl/certs/ca-certificates.crt";
/// The virtio-serial port that carries the guest's SSH agent requests to
/// the host's filter (--git-ssh-agent; secrets/ssh_agent_filter.h), and
/// the socket airlock-init serves them on in the guest (SSH_AUTH_SOCK), on
/// the /run tmpfs.
inline constexpr const char* kSshAgentPort = "airlock.ssh-agent";
inline constexpr const char* kSshAgentSocket = "/run/airlock/ssh-agent/agent.sock";
/// PATH of airlock's own helper commands in the guest (mkdir, chown, cat).
inline constexpr const char* kHelperPath = "/usr/local/bin:/usr/bin:/bin";

}  // namespace airlock::guest
