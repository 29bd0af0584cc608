#include "guest/exec_server.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "guest/boot.h"
#include "guest/layer_export.h"
#include "vm/guest_contract.h"

namespace airlock::guest {

using protocol::FrameType;

struct ExecServer::Command {
  uint32_t channel = 0;
  pid_t pid = -1;
  bool pty = false;
  int stdinFd = -1;   // write end to the child (the pty master when pty)
  int stdoutFd = -1;  // read end (the pty master when pty)
  int stderrFd = -1;  // read end; -1 when pty
  std::string pendingStdin;
  bool stdinEof = false;
  bool exited = false;
  protocol::ExitStatus status;
};

namespace {

void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void closeFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

/// Looks up `name` on the PATH found in `env` (or a default PATH).
std::string resolveProgram(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = guest::kDefaultPath;
  for (const auto& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::vector<char*> cStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

ExecServer::ExecServer(int portFd) : port_(portFd) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signalFd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);
}

ExecServer::~ExecServer() { closeFd(signalFd_); }

void ExecServer::send(FrameType type, uint32_t channel, std::string_view payload) {
  std::string frame = protocol::encodeFrame(type, channel, payload);
  std::string_view left = frame;
  while (!left.empty()) {
    ssize_t n = write(port_, left.data(), left.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        pollfd p{port_, POLLOUT, 0};
        poll(&p, 1, 100);
        continue;
      }
      running_ = false;
      return;
    }
    left.remove_prefix(static_cast<size_t>(n));
  }
}

void ExecServer::run() {
  send(FrameType::kHello, 0, protocol::encodeHello("airlock-init"));
  char buf[65536];
  while (running_) {
    std::vector<pollfd> fds;
    std::vector<std::pair<uint32_t, int>> owners;  // (channel, which: 0 stdout 1 stderr 2 stdin)
    fds.push_back({port_, POLLIN, 0});
    owners.push_back({0, -1});
    fds.push_back({signalFd_, POLLIN, 0});
    owners.push_back({0, -1});
    for (auto& [channel, cmd] : commands_) {
      if (cmd->stdoutFd >= 0) {
        fds.push_back({cmd->stdoutFd, POLLIN, 0});
        owners.push_back({channel, 0});
      }
      if (cmd->stderrFd >= 0) {
        fds.push_back({cmd->stderrFd, POLLIN, 0});
        owners.push_back({channel, 1});
      }
      if (cmd->stdinFd >= 0 && !cmd->pendingStdin.empty()) {
        fds.push_back({cmd->stdinFd, POLLOUT, 0});
        owners.push_back({channel, 2});
      }
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      logLine(std::string("poll failed: ") + std::strerror(errno));
      break;
    }
    if (fds[1].revents) reapChildren();
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = commands_.find(owners[i].first);
      if (it == commands_.end()) continue;
      Command& cmd = *it->second;
      switch (owners[i].second) {
        case 0: pumpOutput(cmd, cmd.stdoutFd, FrameType::kStdout, false); break;
        case 1: pumpOutput(cmd, cmd.stderrFd, FrameType::kStderr, false); break;
        case 2: flushStdin(cmd); break;
      }
      finishIfDone(owners[i].first);
    }
    if (fds[0].revents & POLLIN) {
      ssize_t n = read(port_, buf, sizeof buf);
      if (n == 0) {
        logLine("the host closed the control channel");
        break;
      }
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        logLine(std::string("control channel read failed: ") + std::strerror(errno));
        break;
      }
      auto ok = decoder_.consume(std::string_view(buf, static_cast<size_t>(n)),
                                 [this](protocol::Frame&& frame) { onFrame(frame); });
      if (!ok) {
        logLine("bad frame from host: " + ok.error());
        break;
      }
    } else if (fds[0].revents & (POLLHUP | POLLERR)) {
      logLine("the host disconnected");
      break;
    }
  }
  killAll();
}

void ExecServer::onFrame(const protocol::Frame& frame) {
  auto it = commands_.find(frame.channel);
  Command* cmd = it == commands_.end() ? nullptr : it->second.get();
  switch (frame.type) {
    case FrameType::kExec: {
      if (cmd || frame.channel == 0) {
        send(FrameType::kError, frame.channel, "channel is already in use");
        return;
      }
      auto request = protocol::decodeExec(frame.payload);
      if (!request) {
        send(FrameType::kError, frame.channel, request.error());
        send(FrameType::kExit, frame.channel, protocol::encodeExit({false, 127}));
        return;
      }
      startCommand(frame.channel, *request);
      return;
    }
    case FrameType::kStdin:
      if (!cmd) return;
      if (frame.payload.empty()) {
        cmd->stdinEof = true;
      } else {
        cmd->pendingStdin += frame.payload;
      }
      flushStdin(*cmd);
      return;
    case FrameType::kResize: {
      auto size = protocol::decodeResize(frame.payload);
      if (!cmd || !size || !cmd->pty || cmd->stdoutFd < 0) return;
      winsize ws{size->first, size->second, 0, 0};
      ioctl(cmd->stdoutFd, TIOCSWINSZ, &ws);
      return;
    }
    case FrameType::kSignal: {
      auto sig = protocol::decodeU32(frame.payload);
      if (!cmd || !sig || *sig == 0 || *sig > 64 || cmd->exited) return;
      kill(-cmd->pid, static_cast<int>(*sig));
      return;
    }
    case FrameType::kShutdown:
      running_ = false;
      return;
    case FrameType::kExport:
      exportWorkspace(frame.channel);
      return;
    default:
      logLine(std::string("ignoring unexpected frame from host: ") + protocol::typeName(frame.type));
      return;
  }
}

void ExecServer::startCommand(uint32_t channel, const protocol::ExecRequest& request) {
  auto cmd = std::make_unique<Command>();
  cmd->channel = channel;
  cmd->pty = request.pty;
  int inPipe[2] = {-1, -1}, outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1}, execPipe[2] = {-1, -1};
  int master = -1;
  std::string slaveName;
  auto failStart = [&](const std::string& why) {
    for (int fd : {inPipe[0], inPipe[1], outPipe[0], outPipe[1], errPipe[0], errPipe[1], execPipe[0], execPipe[1],
                   master})
      if (fd >= 0) close(fd);
    send(FrameType::kError, channel, why);
    send(FrameType::kExit, channel, protocol::encodeExit({false, 127}));
  };
  if (pipe2(execPipe, O_CLOEXEC) != 0) return failStart(std::string("pipe: ") + std::strerror(errno));
  if (request.pty) {
    master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || !ptsname(master))
      return failStart(std::string("cannot allocate a pty: ") + std::strerror(errno));
    slaveName = ptsname(master);
    winsize ws{request.rows, request.cols, 0, 0};
    ioctl(master, TIOCSWINSZ, &ws);
  } else if (pipe2(inPipe, O_CLOEXEC) != 0 || pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) {
    return failStart(std::string("pipe: ") + std::strerror(errno));
  }
  std::string program = resolveProgram(request.argv[0], request.env);
  auto argv = cStrings(request.argv);
  auto envp = cStrings(request.env);
  pid_t pid = fork();
  if (pid < 0) return failStart(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    auto die = [&](int err) {
      (void)!write(execPipe[1], &err, sizeof err);
      _exit(127);
    };
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    if (request.pty) {
      int slave = open(slaveName.c_str(), O_RDWR);
      if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) die(errno);
      dup2(slave, 0);
      dup2(slave, 1);
      dup2(slave, 2);
      if (slave > 2) close(slave);
    } else {
      dup2(inPipe[0], 0);
      dup2(outPipe[1], 1);
      dup2(errPipe[1], 2);
    }
    if (setgroups(0, nullptr) != 0 || setgid(request.gid) != 0 || setuid(request.uid) != 0) die(errno);
    if (chdir(request.cwd.c_str()) != 0) die(errno);
    if (program.empty()) die(ENOENT);
    execve(program.c_str(), argv.data(), envp.data());
    die(errno);
  }
  close(execPipe[1]);
  int execErr = 0;
  ssize_t n;
  while ((n = read(execPipe[0], &execErr, sizeof execErr)) < 0 && errno == EINTR) {
  }
  close(execPipe[0]);
  if (n == sizeof execErr) {
    for (int fd : {inPipe[0], inPipe[1], outPipe[0], outPipe[1], errPipe[0], errPipe[1], master})
      if (fd >= 0) close(fd);
    std::string why = "cannot run '" + request.argv[0] + "'";
    if (execErr == ENOENT && request.cwd != "/" && access(request.cwd.c_str(), F_OK) != 0)
      why += ": working directory " + request.cwd + " does not exist";
    else
      why += std::string(": ") + std::strerror(execErr);
    send(FrameType::kError, channel, why);
    // The child exits 127; reapChildren() will not find it in commands_.
    send(FrameType::kExit, channel, protocol::encodeExit({false, execErr == ENOENT ? 127u : 126u}));
    return;
  }
  cmd->pid = pid;
  if (request.pty) {
    cmd->stdinFd = master;
    cmd->stdoutFd = master;
  } else {
    close(inPipe[0]);
    close(outPipe[1]);
    close(errPipe[1]);
    cmd->stdinFd = inPipe[1];
    cmd->stdoutFd = outPipe[0];
    cmd->stderrFd = errPipe[0];
  }
  setNonBlocking(cmd->stdinFd);
  setNonBlocking(cmd->stdoutFd);
  if (cmd->stderrFd >= 0) setNonBlocking(cmd->stderrFd);
  commands_[channel] = std::move(cmd);
}

void ExecServer::pumpOutput(Command& cmd, int fd, FrameType type, bool drain) {
  char buf[protocol::kMaxChunk];
  const uint32_t channel = cmd.channel;
  for (int rounds = 0; drain || rounds < 4; ++rounds) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      send(type, channel, std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    // EOF (or EIO on a pty whose slave side is closed): end of this stream.
    send(type, channel, {});
    if (fd == cmd.stdoutFd) {
      if (cmd.pty) cmd.stdinFd = -1;
      closeFd(cmd.stdoutFd);
    } else {
      closeFd(cmd.stderrFd);
    }
    return;
  }
}

void ExecServer::flushStdin(Command& cmd) {
  uint32_t delivered = 0;
  while (!cmd.pendingStdin.empty() && cmd.stdinFd >= 0) {
    ssize_t n = write(cmd.stdinFd, cmd.pendingStdin.data(), cmd.pendingStdin.size());
    if (n > 0) {
      cmd.pendingStdin.erase(0, static_cast<size_t>(n));
      delivered += static_cast<uint32_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    // The command closed its stdin: drop the rest, but still return the credit.
    delivered += static_cast<uint32_t>(cmd.pendingStdin.size());
    cmd.pendingStdin.clear();
    if (!cmd.pty) closeFd(cmd.stdinFd);
  }
  if (cmd.stdinFd < 0 && !cmd.pendingStdin.empty()) {
    delivered += static_cast<uint32_t>(cmd.pendingStdin.size());
    cmd.pendingStdin.clear();
  }
  if (delivered) send(FrameType::kStdinAck, cmd.channel, protocol::encodeU32(delivered));
  if (cmd.stdinEof && cmd.pendingStdin.empty() && !cmd.pty) closeFd(cmd.stdinFd);
}

void ExecServer::reapChildren() {
  signalfd_siginfo info;
  while (read(signalFd_, &info, sizeof info) == sizeof info) {
  }
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (auto& [channel, cmd] : commands_) {
      if (cmd->pid != pid) continue;
      cmd->exited = true;
      cmd->status = WIFSIGNALED(status) ? protocol::ExitStatus{true, static_cast<uint32_t>(WTERMSIG(status))}
                                        : protocol::ExitStatus{false, static_cast<uint32_t>(WEXITSTATUS(status))};
      // Output written before exit is still in the pipe/pty: drain it now.
      if (cmd->stdoutFd >= 0) pumpOutput(*cmd, cmd->stdoutFd, FrameType::kStdout, true);
      if (cmd->stderrFd >= 0) pumpOutput(*cmd, cmd->stderrFd, FrameType::kStderr, true);
      finishIfDone(channel);
      break;
    }
  }
}

void ExecServer::finishIfDone(uint32_t channel) {
  auto it = commands_.find(channel);
  if (it == commands_.end()) return;
  Command& cmd = *it->second;
  if (!cmd.exited) return;
  // A background process may still hold the output open: the command is done
  // when its main process has exited and the output was drained.
  if (cmd.stdoutFd >= 0) {
    send(FrameType::kStdout, channel, {});
    if (cmd.pty) cmd.stdinFd = -1;
    closeFd(cmd.stdoutFd);
  }
  if (cmd.stderrFd >= 0) {
    send(FrameType::kStderr, channel, {});
    closeFd(cmd.stderrFd);
  }
  if (!cmd.pty) closeFd(cmd.stdinFd);
  send(FrameType::kExit, channel, protocol::encodeExit(cmd.status));
  commands_.erase(it);
}

void ExecServer::exportWorkspace(uint32_t channel) {
  std::string pending, error, skipped;
  auto sink = [&](std::string_view data) {
    pending.append(data);
    while (pending.size() >= protocol::kMaxChunk) {
      send(FrameType::kStdout, channel, std::string_view(pending).substr(0, protocol::kMaxChunk));
      pending.erase(0, protocol::kMaxChunk);
    }
    return running_;
  };
  // A consistent export while the agent may still run (`airlock diff`):
  // the scratch filesystem (the upper layers) is frozen for the walk, so
  // every write waits until it is done; reads, and so the walk, go on.
  // Where the freeze is refused, the walk sees the layer as it changes.
  // A disk with no workspace layer yet (a session killed early) exports empty.
  if (access(kWorkspaceUpper, F_OK) != 0) {
    std::string upper = kWorkspaceUpper;
    (void)mkdir(upper.substr(0, upper.rfind('/')).c_str(), 0755);
    (void)mkdir(kWorkspaceUpper, 0755);
  }
  int scratch = open(kScratchMount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool frozen = scratch >= 0 && ioctl(scratch, FIFREEZE, 0) == 0;
  if (!frozen) {
    logLine(std::string("export: the scratch filesystem was not frozen: ") + std::strerror(errno));
    sync();
  }
  bool ok = exportUpperLayer(kWorkspaceUpper, sink, error, skipped);
  if (frozen && ioctl(scratch, FITHAW, 0) != 0) logLine(std::string("export: thaw failed: ") + std::strerror(errno));
  if (scratch >= 0) close(scratch);
  if (ok && !pending.empty()) send(FrameType::kStdout, channel, pending);
  if (!skipped.empty()) logLine("export skipped:\n" + skipped);
  if (!ok) send(FrameType::kError, channel, error);
  send(FrameType::kStdout, channel, {});
  send(FrameType::kExit, channel, protocol::encodeExit({false, ok ? 0u : 1u}));
}

void ExecServer::killAll() {
  for (auto& [channel, cmd] : commands_)
    if (!cmd->exited) kill(-cmd->pid, SIGKILL);
  kill(-1, SIGKILL);
}

}  // namespace airlock::guest
