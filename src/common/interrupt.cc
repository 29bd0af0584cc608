#include "common/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace airlock {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

volatile sig_atomic_t gSignal = 0;
volatile sig_atomic_t gActive = 0;
std::atomic<pid_t> gChild{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");
struct sigaction gPrevious[3];

void onSignal(int sig) {
  const pid_t child = gChild.load();
  if (gSignal != 0) {
    // The second: the user insists. The child's group goes too (it is
    // not in the terminal's foreground group).
    if (child > 0) ::kill(-child, SIGKILL);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  gSignal = sig;
  constexpr char kSaid[] = "\nairlock: interrupted: stopping and removing what this run made (again to quit at once)\n";
  (void)!::write(STDERR_FILENO, kSaid, sizeof kSaid - 1);
  // The child's process group hears it as Ctrl-C: the terminal signals only
  // airlock's own group, and programs that hold on to SIGTERM while their
  // children work (mmdebstrap) end on SIGINT.
  if (child > 0) ::kill(-child, SIGINT);
}

}  // namespace

InterruptScope::InterruptScope() {
  gSignal = 0;
  struct sigaction action {};
  action.sa_handler = onSignal;
  action.sa_flags = 0;  // no SA_RESTART: a blocking call (a lock's wait) returns EINTR and sees the interrupt
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &action, &gPrevious[i]);
  gActive = 1;
}

InterruptScope::~InterruptScope() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &gPrevious[i], nullptr);
  gActive = 0;
  gSignal = 0;
}

int interruptSignal() { return gSignal; }

bool interruptible() { return gActive != 0; }

int blockInterrupts(sigset_t* previous) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : kSignals) sigaddset(&mask, sig);
  return ::pthread_sigmask(SIG_BLOCK, &mask, previous);
}

void resetInterruptsInChild() {
  for (int sig : kSignals) ::signal(sig, SIG_DFL);
  // In a background process group: a read of the terminal fails (EIO)
  // instead of stopping the child, and airlock with it.
  ::signal(SIGTTIN, SIG_IGN);
  ::signal(SIGTTOU, SIG_IGN);
}

void setWaitedChild(pid_t pid) {
  gChild.store(pid);
  if (pid > 0 && gSignal != 0) ::kill(-pid, SIGINT);  // it came before the child was named
}

}  // namespace airlock
