#include "session/command_waiter.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>

#include "common/thread_signals.h"

namespace airlock::session {

CommandWaiter::CommandWaiter(std::shared_ptr<vm::Command> command)
    : command_(std::move(command)),
      done_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      status_(fail("not finished")) {
  thread_ = std::thread([this] {
    blockSignalsInThisThread();
    while (!giveUp_) {
      auto r = command_->waitFor(std::chrono::milliseconds(100));
      if (!r) continue;
      status_ = std::move(*r);
      finished_ = true;
      uint64_t one = 1;
      (void)!::write(done_.get(), &one, sizeof one);
      return;
    }
  });
}

CommandWaiter::~CommandWaiter() {
  giveUp_ = true;
  thread_.join();
}

}  // namespace airlock::session
