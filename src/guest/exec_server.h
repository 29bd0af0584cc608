#pragma once
// The guest half of the control protocol: reads frames from the control port,
// starts commands (pty or pipes, as a given uid/gid), streams their output,
// delivers stdin within the host's window, reports exit status. Serves any
// number of commands at once from one poll loop; also reaps orphans (PID 1).

#include <map>
#include <memory>
#include <string>

#include "vm/protocol.h"

namespace airlock::guest {

class ExecServer {
 public:
  /// `portFd` is the open control port (blocking reads/writes).
  explicit ExecServer(int portFd);
  ~ExecServer();

  /// Sends hello, then serves until the host asks for shutdown or goes away.
  /// Returns when the VM should power off.
  void run();

 private:
  struct Command;
  void onFrame(const protocol::Frame& frame);
  void startCommand(uint32_t channel, const protocol::ExecRequest& request);
  void send(protocol::FrameType type, uint32_t channel, std::string_view payload);
  void pumpOutput(Command& cmd, int fd, protocol::FrameType type, bool drain);
  void flushStdin(Command& cmd);
  void reapChildren();
  void finishIfDone(uint32_t channel);
  void killAll();
  /// Streams the workspace overlay's upper layer (kExport).
  void exportWorkspace(uint32_t channel);

  int port_;
  int signalFd_ = -1;
  bool running_ = true;
  protocol::FrameDecoder decoder_;
  std::map<uint32_t, std::unique_ptr<Command>> commands_;
};

}  // namespace airlock::guest
