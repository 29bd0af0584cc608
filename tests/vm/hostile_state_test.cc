// A hostile guest's agent state (issue 16): the guest's state save sends a
// crafted stream (a device node, a setuid file, symlinks to /etc/shadow and out of the state, a hard
// link, a path out of the state dir, a file outside the state's paths), and
// then 10 times the state's cap. The host keeps nothing outside the rules,
// the next run gets none of it, and an oversized state keeps the previous one.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "airlock_process.h"
#include "support/tar_builder.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

namespace fs = std::filesystem;

void put(const std::string& path, const std::string& content, fs::perms mode = fs::perms(0644)) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
  fs::permissions(path, mode);
}

/// Every entry under `dir` that a saved state may not hold: anything but
/// directories, regular files without setuid/setgid/sticky bits, and
/// relative symlinks that resolve inside `dir`.
std::vector<std::string> outsideTheRules(const std::string& dir) {
  std::vector<std::string> out;
  const fs::path top = fs::canonical(dir);
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    if (lstat(e.path().c_str(), &st) != 0) continue;
    std::string name = fs::relative(e.path(), dir).string();
    if (S_ISLNK(st.st_mode)) {
      fs::path target = fs::read_symlink(e.path());
      std::error_code ec;
      fs::path resolved = fs::weakly_canonical(e.path().parent_path() / target, ec);
      if (target.is_absolute() || ec || resolved.string().rfind(top.string() + "/", 0) != 0)
        out.push_back(name + " -> " + target.string());
    } else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
      out.push_back(name + ": special file");
    } else if (st.st_mode & 07000) {
      out.push_back(name + ": setuid/setgid/sticky");
    } else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
      out.push_back(name + ": hard link");
    }
  }
  return out;
}

TEST(HostileState, NothingOutsideTheRulesIsKeptOrRestoredAndAnOversizedStateKeepsThePrevious) {
  SKIP_WITHOUT_VMS();
  const std::string state = freshStateDir();
  const std::string ws = state + "/ws", config = state + "/config", data = state + "/data", root = state + "/rootfs";
  fs::create_directories(ws);
  put(ws + "/README", "hello\n");
  // The test rootfs with a hostile `sh` first on airlock's helper PATH (the
  // test rootfs's busybox runs its own tar applet whatever PATH says): the
  // state save (`sh -c '... tar -c ...'`) gets the crafted stream instead.
  fs::copy(testRootfs(), root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  put(root + "/usr/local/bin/sh",
      "#!/bin/sh\n"
      "case \"$2\" in *\"tar -c\"*)\n"
      "  if [ -e /workspace/big ]; then cat /hostile/big.tar; else cat /hostile/state.tar; fi; exit 0;;\n"
      "esac\n"
      "exec /bin/sh \"$@\"\n",
      fs::perms(0755));
  put(root + "/hostile/state.tar",
      makeTar({{".hostile", 'd'},
               {".hostile/ok", 'f', "kept\n"},
               {".hostile/sda", 'b'},
               {".hostile/fifo", 'p'},
               {".hostile/suid", 'f', "#!/bin/sh\nid\n", "", 04755},
               {".hostile/shadow", 'l', "", "/etc/shadow"},
               {".hostile/up", 'l', "", "../../../../etc"},
               {".hostile/hard", 'h', "", ".hostile/ok"},
               {".hostile/../../escape", 'f', "escaped\n"},
               {".bashrc", 'f', "not state\n"}}));
  put(root + "/hostile/big.tar", makeTar({{".hostile", 'd'}, {".hostile/big", 'f', std::string(10 << 20, 'x')}}));
  fs::create_directories(config + "/airlock");
  std::ofstream(config + "/airlock/config.yaml")
      << "image: " << root << "\n"
      << "agents:\n"
      << "  hostile:\n"
      << "    description: an agent whose guest sends a hostile state\n"
      << "    image: example.invalid/unused:1\n"
      << "    command: [sh, -c, 'ls -la $HOME/.hostile/ 2>&1; cat $HOME/.hostile/ok 2>&1; true']\n"
      << "    state: [.hostile]\n"
      << "    state_max_mib: 1\n";
  const std::map<std::string, std::string> env = {
      {"XDG_STATE_HOME", state}, {"XDG_CONFIG_HOME", config}, {"XDG_DATA_HOME", data}};
  auto r = runAirlock({"run", "hostile", "-w", ws, "--review=auto"}, "", env, 600);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("the agent's saved state left out"), std::string::npos) << r.err;
  // Only the plain file and the setuid file (without its bits) are kept.
  const std::string kept = data + "/airlock/state/hostile";
  ASSERT_TRUE(fs::exists(kept)) << r.err;
  EXPECT_EQ(outsideTheRules(kept), std::vector<std::string>{});
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(kept)) names.push_back(fs::relative(e.path(), kept).string());
  std::string stateDir = fs::directory_iterator(kept)->path().string();
  EXPECT_TRUE(fs::exists(stateDir + "/home/.hostile/ok"));
  for (const char* gone : {"sda", "fifo", "shadow", "up", "hard"})
    EXPECT_FALSE(fs::exists(fs::symlink_status(stateDir + "/home/.hostile/" + gone))) << gone;
  EXPECT_FALSE(fs::exists(stateDir + "/home/.bashrc"));
  for (const std::string& dir : {stateDir, stateDir + "/home", kept, data + "/airlock", data, state})
    EXPECT_FALSE(fs::exists(dir + "/escape")) << dir;

  // Next run: 10 times the cap. The restored state has nothing of the
  // hostile entries; the oversized one is refused and the previous stays.
  put(ws + "/big", "");
  r = runAirlock({"run", "hostile", "-w", ws, "--review=auto"}, "", env, 600);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("kept"), std::string::npos) << r.out;
  for (const char* gone : {"sda", "fifo", "shadow", "up", "hard", "escape"})
    EXPECT_EQ(r.out.find(std::string(" ") + gone), std::string::npos) << gone << " was restored:\n" << r.out;
  EXPECT_NE(r.err.find("over its cap of 1 MiB"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(stateDir + "/home/.hostile/ok"));
  EXPECT_FALSE(fs::exists(stateDir + "/home/.hostile/big"));
  EXPECT_EQ(outsideTheRules(kept), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(stateDir + "/save.tar"));
  EXPECT_EQ(leftoverRunDirs(state), "");
}

}  // namespace
}  // namespace airlock::test
