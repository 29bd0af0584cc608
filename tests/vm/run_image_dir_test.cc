// `airlock run` with `image: DIR` (a rootfs directory, built into erofs with
// --all-root): the agent user must still own a writable home.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace airlock::test
