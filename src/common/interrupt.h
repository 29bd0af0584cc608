#pragma once
// Ctrl-C while airlock prepares a session. A signal that would end airlock
// (SIGINT, SIGTERM, SIGHUP) during that time is recorded instead, so the
// steps under way fail, unwind and remove what they made (the snapshot,
// temporary image files, the VM) before airlock exits. A second signal ends
// airlock at once, as without the scope.

#include <signal.h>
#include <sys/types.h>

#include <string_view>

#include "common/error.h"

namespace airlock {

/// Catches SIGINT, SIGTERM and SIGHUP while it lives (one that was ignored,
/// as under nohup, stays ignored, in airlock and its children); the
/// previous dispositions come back at end(). The three are unblocked in the
/// calling thread meanwhile (a detached session's supervisor blocks them
/// for its signalfd: one already pending is caught at once) and its mask
/// comes back at end(). The first signal is recorded
/// (interruptSignal()), a line on stderr says what happens, and the process
/// group of the child runCommand() waits for gets SIGINT, as from Ctrl-C
/// (runCommand() starts it in a group of its own meanwhile, so a signal sent
/// to airlock alone reaches the whole tree of a program like mmdebstrap). A
/// second signal kills that group and takes its default action (the
/// process ends). No SA_RESTART: a blocking call fails with EINTR, and the
/// waits that loop on it check interruptSignal(). Created on the main
/// thread. A scope created while another lives (the build VM of an agent's
/// image, inside `airlock run`'s preparation) is part of that one: it
/// changes nothing, and its end() says what was caught so far without
/// clearing it, so the outer scope still sees it.
class InterruptScope {
 public:
  InterruptScope();
  /// end(), if it was not called.
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  /// Ends the scope: the previous dispositions back (with the three signals
  /// blocked meanwhile, so one that arrives now is still counted rather than
  /// killing airlock), and returns the signal caught (0: none). Again: the
  /// same value.
  int end();

 private:
  bool ended_ = false;
  bool nested_ = false;  ///< created inside another scope: that one catches
  int caught_ = 0;
  sigset_t mask_{};  ///< the calling thread's mask before the scope
};

/// The first signal an InterruptScope caught (SIGINT, SIGTERM or SIGHUP),
/// 0 when none was or no scope lives. Async-signal-safe.
int interruptSignal();

/// The error of a step that `sig` interrupted: "interrupted (INT) WHAT",
/// exit code 128 + `sig`.
Error interruptedError(int sig, std::string_view what);

/// True for an interruptedError()'s code (nothing retries it).
bool isInterruption(int code);

/// True while an InterruptScope lives. Async-signal-safe.
bool interruptible();

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (the previous
/// mask into `previous`), around a fork: the child resets them before they
/// can reach the inherited handler. Returns pthread_sigmask()'s result.
int blockInterrupts(sigset_t* previous);

/// In a forked child, before exec: the three signals back to their default
/// action, and SIGTTIN and SIGTTOU ignored (a child in a process group of its
/// own that reads the terminal gets EIO rather than stopping). Async-signal-safe.
void resetInterruptsInChild();

/// Names the child runCommand() waits for (0: none), the leader of the
/// process group a caught signal is passed on to; when one was caught
/// already, the group gets SIGINT now. Async-signal-safe.
void setWaitedChild(pid_t pid);

}  // namespace airlock
