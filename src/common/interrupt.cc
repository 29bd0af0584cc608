#include "common/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace airlock {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::atomic<int> gSignal{0};
volatile sig_atomic_t gActive = 0;
std::atomic<pid_t> gChild{0};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free,
              "used from a signal handler");
struct sigaction gPrevious[3];
bool gIgnored[3];  // ignored before the scope (nohup): left so, in airlock and its children

sigset_t interruptMask() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : kSignals) sigaddset(&mask, sig);
  return mask;
}

void onSignal(int sig) {
  const int savedErrno = errno;
  int none = 0;
  if (!gSignal.compare_exchange_strong(none, sig)) {
    // The second: the user insists. The child's group goes too (it is
    // not in the terminal's foreground group).
    if (const pid_t child = gChild.load(); child > 0) ::kill(-child, SIGKILL);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    errno = savedErrno;
    return;
  }
  constexpr char kSaid[] = "\nairlock: interrupted: stopping and removing what this run made (again to quit at once)\n";
  (void)!::write(STDERR_FILENO, kSaid, sizeof kSaid - 1);
  // The child's process group hears it as Ctrl-C: the terminal signals only
  // airlock's own group, and programs that hold on to SIGTERM while their
  // children work (mmdebstrap) end on SIGINT.
  if (const pid_t child = gChild.load(); child > 0) ::kill(-child, SIGINT);
  errno = savedErrno;
}

}  // namespace

InterruptScope::InterruptScope() {
  if (gActive) {  // the outer scope catches for both
    nested_ = true;
    return;
  }
  gSignal = 0;
  struct sigaction action {};
  action.sa_handler = onSignal;
  action.sa_flags = 0;  // no SA_RESTART: a blocking call (a lock's wait) returns EINTR and sees the interrupt
  action.sa_mask = interruptMask();  // one handler at a time: a second signal is the second
  for (int i = 0; i < 3; ++i) {
    ::sigaction(kSignals[i], nullptr, &gPrevious[i]);
    gIgnored[i] = gPrevious[i].sa_handler == SIG_IGN;
    if (!gIgnored[i]) ::sigaction(kSignals[i], &action, nullptr);
  }
  gActive = 1;
  const sigset_t mask = interruptMask();
  ::pthread_sigmask(SIG_UNBLOCK, &mask, &mask_);
}

InterruptScope::~InterruptScope() { (void)end(); }

int InterruptScope::end() {
  if (ended_) return caught_;
  ended_ = true;
  if (nested_) return caught_ = gSignal.load();
  // Blocked while the handlers go back, then a signal that came meanwhile
  // is taken from the pending set: none is lost or left to kill airlock.
  sigset_t mask = interruptMask();
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  for (int i = 0; i < 3; ++i)
    if (!gIgnored[i]) ::sigaction(kSignals[i], &gPrevious[i], nullptr);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  for (int i = 0; i < 3; ++i) {
    if (gIgnored[i] || !sigismember(&pending, kSignals[i])) continue;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, kSignals[i]);
    const timespec now{0, 0};
    if (::sigtimedwait(&one, nullptr, &now) == kSignals[i]) {
      int none = 0;
      gSignal.compare_exchange_strong(none, kSignals[i]);
    }
  }
  gActive = 0;
  caught_ = gSignal.exchange(0);
  ::pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
  return caught_;
}

int interruptSignal() { return gSignal.load(); }

Error interruptedError(int sig, std::string_view what) {
  return Error{fmt::format("interrupted ({}) {}", sigabbrev_np(sig), what), 128 + sig};
}

bool isInterruption(int code) {
  for (int sig : kSignals)
    if (code == 128 + sig) return true;
  return false;
}

bool interruptible() { return gActive != 0; }

int blockInterrupts(sigset_t* previous) {
  const sigset_t mask = interruptMask();
  return ::pthread_sigmask(SIG_BLOCK, &mask, previous);
}

void resetInterruptsInChild() {
  for (int i = 0; i < 3; ++i) ::signal(kSignals[i], gIgnored[i] ? SIG_IGN : SIG_DFL);
  // In a background process group: a read of the terminal fails (EIO)
  // instead of stopping the child, and airlock with it.
  ::signal(SIGTTIN, SIG_IGN);
  ::signal(SIGTTOU, SIG_IGN);
}

void setWaitedChild(pid_t pid) {
  gChild.store(pid);  // then gSignal: the handler stores gSignal, then reads gChild; one of the two sees the other
  if (pid > 0 && gSignal.load() != 0) ::kill(-pid, SIGINT);  // it came before the child was named
}

}  // namespace airlock
