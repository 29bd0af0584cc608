// `airlock run` with `image: DIR` (a rootfs directory, built into erofs with
// --all-root): the agent user must still own a writable home.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "airlock_process.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

namespace fs = std::filesystem;

TEST(RunImageDir, AgentHomeIsWritableInARootfsDirImage) {
  std::string state = freshStateDir();
  std::string ws = state + "/ws", config = state + "/config";
  fs::create_directories(ws);
  fs::create_directories(config + "/airlock");
  { std::ofstream(ws + "/file.txt") << "original\n"; }
  {
    std::ofstream(config + "/airlock/config.yaml")
        << "image: " << testRootfs() << "\n"
        << "agents:\n"
        << "  home-writer:\n"
        << "    description: writes to its home, then to the workspace\n"
        << "    image: example.invalid/unused:1\n"
        << "    command: [sh, -c, 'mkdir -p $HOME/.config/a && echo ok > $HOME/.config/a/probe && "
           "cat $HOME/.config/a/probe > /workspace/home-ok.txt']\n";
  }
  auto r = runAirlock({"run", "home-writer", "-q", "-w", ws, "--review=auto"}, "",
                      {{"XDG_STATE_HOME", state}, {"XDG_CONFIG_HOME", config}}, 600);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  std::ifstream in(ws + "/home-ok.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "ok") << r.err;
  EXPECT_EQ(leftoverRunDirs(state), "");
}

// Issue 15, item 4, custom agents: a `token` login kept by `airlock
// login` reaches the agent as its variable's value, in no process's argv
// in the guest, in no file of the agent's home, and in nothing airlock
// writes on the host but the store.
TEST(RunImageDir, ACustomAgentsTokenLoginReachesTheAgentOnlyInItsVariable) {
  std::string state = freshStateDir();
  std::string ws = state + "/ws", config = state + "/config", data = state + "/data";
  fs::create_directories(ws);
  fs::create_directories(config + "/airlock");
  const std::string token = "acme-tok-0123456789abcdef";
  // Its SHA-256: what the agent compares the variable with (the token
  // itself never goes on a command line).
  const std::string kTokenSha256 = "fe4c5584452973d93d2207579e705a9d35d80b3ce3adbba794a2ef9ee0e74622";
  {
    std::ofstream(config + "/airlock/config.yaml")
        << "image: " << testRootfs() << "\n"
        << "agents:\n"
        << "  acme:\n"
        << "    description: checks its token\n"
        << "    image: example.invalid/unused:1\n"
        << "    command: [sh, -c, 'printf %s \"$ACME_TOKEN\" | sha256sum | cut -c1-64 > /tmp/sum; "
           "[ \"$(cat /tmp/sum)\" = " << kTokenSha256 << " ] || exit 3; "
           "printf %s \"$ACME_TOKEN\" > /tmp/pattern; "
           "if grep -lsF -f /tmp/pattern /proc/[0-9]*/cmdline; then exit 4; fi; "
           "if grep -rlsF -f /tmp/pattern $HOME; then exit 5; fi; "
           "rm /tmp/pattern; echo ok > /workspace/token-ok.txt']\n"
        << "    login: {format: token, delivery: vm, token_env: ACME_TOKEN, hosts: [api.acme.example]}\n";
  }
  const std::map<std::string, std::string> env = {{"XDG_STATE_HOME", state}, {"XDG_CONFIG_HOME", config},
                                                  {"XDG_DATA_HOME", data}, {"AIRLOCK_SECRET_STORE", "file"}};
  auto login = runAirlock({"login", "acme"}, token + "\n", env, 60);
  ASSERT_EQ(login.exitCode, 0) << login.err;
  auto r = runAirlock({"run", "acme", "-w", ws, "--review=auto"}, "", env, 600);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("login enters the VM (acme cannot be brokered): as $ACME_TOKEN"), std::string::npos) << r.err;
  std::ifstream in(ws + "/token-ok.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "ok") << r.err;
  EXPECT_EQ(r.out.find(token), std::string::npos);
  EXPECT_EQ(r.err.find(token), std::string::npos);
  for (const auto& entry : fs::recursive_directory_iterator(state)) {
    if (!entry.is_regular_file() || entry.path().string().starts_with(data + "/airlock/secrets/")) continue;
    std::ifstream file(entry.path(), std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content.find(token), std::string::npos) << entry.path();
  }
  EXPECT_EQ(leftoverRunDirs(state), "");
}

}  // namespace
}  // namespace airlock::test
