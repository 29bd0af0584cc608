#pragma once
// A server a test starts that prints "PORT n" on its stdout once it
// listens (the MCP test servers in tests/unit/mcp): killed with the test.
// Header-only, so the e2e suite can use it without the support library.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace airlock::test {

class ListeningProcess {
 public:
  /// Runs `argv` (argv[0] an absolute path) with its stdout in `outPath`
  /// and waits up to 5 s for its "PORT n" line; port() is 0 if none came.
  ListeningProcess(const std::vector<std::string>& argv, const std::string& outPath) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0 || dup2(fd, 1) < 0) _exit(127);
      execv(args[0], args.data());
      _exit(127);
    }
    for (int i = 0; i < 100 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::ifstream in(outPath);
      std::stringstream text;
      text << in.rdbuf();
      const std::string out = text.str();
      if (auto at = out.find("PORT "); at != std::string::npos) port_ = std::atoi(out.c_str() + at + 5);
    }
  }
  ~ListeningProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  ListeningProcess(const ListeningProcess&) = delete;
  ListeningProcess& operator=(const ListeningProcess&) = delete;

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace airlock::test
