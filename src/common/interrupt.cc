#include "common/interrupt.h"

#include <signal.h>

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
  if (gSignal != 0) {
    // The second: the user insists.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  gSignal = sig;
  // The child's process group hears it as Ctrl-C: the terminal signals only
  // airlock's own group, and programs that hold on to SIGTERM while their
  // children work (mmdebstrap) end on SIGINT.
  const pid_t child = gChild.load();
  if (child > 0) ::kill(-child, SIGINT);
}

}  // namespace

InterruptScope::InterruptScope() {
  gSignal = 0;
  struct sigaction action {};
  action.sa_handler = onSignal;
  action.sa_flags = SA_RESTART;
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

void setWaitedChild(pid_t pid) {
  gChild.store(pid);
  if (pid > 0 && gSignal != 0) ::kill(-pid, SIGINT);  // it came before the child was named
}

}  // namespace airlock
