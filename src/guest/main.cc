// airlock-init: PID 1 of every airlock VM. Boots the guest (modules, root
// overlay, shares), then serves the host's commands over the control port
// until the host asks for shutdown, and powers off. Static, libc only.

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "guest/boot.h"
#include "guest/exec_server.h"
#include "guest/ssh_agent_relay.h"
#include "vm/guest_contract.h"
#include "vm/protocol.h"

namespace {

using namespace airlock::guest;

[[noreturn]] void fatal(const std::string& what) {
  logLine("fatal: " + what);
  powerOff();
}

/// Finds the virtio-serial port named `wanted`. There is no udev: the name
/// attribute is empty for a moment after the driver binds, so poll (~10 s).
std::string findPort(const std::string& wanted) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (DIR* d = opendir("/sys/class/virtio-ports")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream in(std::string("/sys/class/virtio-ports/") + e->d_name + "/name");
        std::string name;
        std::getline(in, name);
        if (name == wanted) {
          std::string dev = std::string("/dev/") + e->d_name;
          closedir(d);
          return dev;
        }
      }
      closedir(d);
    }
    usleep(10000);
  }
  return "";
}

/// Waits until the host side of the port is connected (poll stops reporting
/// POLLHUP), so the hello is not lost.
void waitForHost(int fd) {
  for (int attempt = 0; attempt < 6000; ++attempt) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 0) >= 0 && !(p.revents & POLLHUP)) return;
    usleep(10000);
  }
}

std::string readCmdline() {
  std::ifstream in("/proc/cmdline");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main() {
  if (getpid() != 1) {
    std::fprintf(stderr, "airlock-init: must run as PID 1 inside an airlock VM\n");
    return 2;
  }
  std::string error;
  if (!mountEarly(error)) fatal(error);
  BootConfig config = parseCmdline(readCmdline());
  if (config.probe) {
    logLine("boot probe reached init");
    powerOff();
  }
  if (!loadModules(config, error)) fatal(error);
  if (config.probeAfterModules) {
    logLine("boot probe loaded the modules");
    powerOff();
  }
  if (!switchToOverlayRoot(config, error)) fatal(error);
  setupHost(config);
  if (config.sshAgent) {
    // Without it the agent's ssh finds no agent and says so; the session goes on.
    std::string agentPort = findPort(airlock::guest::kSshAgentPort), relayError;
    if (agentPort.empty())
      logLine(std::string("no virtio-serial port named ") + airlock::guest::kSshAgentPort);
    else if (!startSshAgentRelay(agentPort, relayError))
      logLine(relayError);
  }
  std::string port = findPort(airlock::protocol::kPortName);
  if (port.empty()) fatal(std::string("no virtio-serial port named ") + airlock::protocol::kPortName);
  int fd = open(port.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) fatal("cannot open " + port + ": " + std::strerror(errno));
  waitForHost(fd);
  ExecServer server(fd);
  server.run();
  powerOff();
}
