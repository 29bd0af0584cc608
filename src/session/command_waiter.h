#pragma once
// Waiting for a command in the sandbox beside other work: a thread of its
// own waits (vm::Command::waitFor, in 100 ms steps) and makes an eventfd
// readable when the command ended, so a loop can poll() for the end next to
// its terminal, sockets and signals. Used by the foreground attach
// (cli/attach.h) and by a detached session's supervisor, for its agent and
// for each `airlock exec`.

#include <atomic>
#include <memory>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "vm/protocol.h"
#include "vm/sandbox.h"

namespace airlock::session {

class CommandWaiter {
 public:
  /// Starts waiting for `command`.
  explicit CommandWaiter(std::shared_ptr<vm::Command> command);
  /// Stops waiting (a command still running is left to the caller) and joins.
  ~CommandWaiter();
  CommandWaiter(const CommandWaiter&) = delete;
  CommandWaiter& operator=(const CommandWaiter&) = delete;

  /// Readable (POLLIN) once the command ended; never read.
  int fd() const { return done_.get(); }
  /// True once the command ended.
  bool done() const { return finished_; }
  /// How it ended, once done(): an error when the sandbox was lost first.
  const Result<protocol::ExitStatus>& status() const { return status_; }

 private:
  std::shared_ptr<vm::Command> command_;
  Fd done_;
  Result<protocol::ExitStatus> status_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> giveUp_{false};
  std::thread thread_;
};

}  // namespace airlock::session
