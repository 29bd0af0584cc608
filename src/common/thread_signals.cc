#include "common/thread_signals.h"

#include <pthread.h>
#include <signal.h>

namespace airlock {

void blockSignalsInThisThread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

}  // namespace airlock
