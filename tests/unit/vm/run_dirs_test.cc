// What a reboot or a killed janitor leaves in $XDG_STATE_HOME/airlock/vms
// is swept by the next launch (vm/run_dirs.h): a kept scratch disk reaches
// its session, nothing of a running machine is touched, and a note naming
// anything but a session's scratch.ext4 moves nothing.

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/paths.h"
#include "vm/run_dirs.h"

namespace airlock::vm {
namespace {

namespace fs = std::filesystem;

struct StateDir {
  TempDir tmp = std::move(*TempDir::create("/tmp", "run-dirs-"));
  std::string vms = tmp.path() + "/vms", sessions = tmp.path() + "/sessions";
  StateDir() {
    fs::create_directories(vms);
    fs::create_directories(sessions + "/s1");
  }
  /// A run directory with a scratch disk and a keep note naming `keep`; locked by the returned fd when `running`.
  std::string runDir(const std::string& name, const std::string& keep, std::optional<Fd>* lock = nullptr) {
    const std::string dir = vms + "/" + name;
    fs::create_directories(dir);
    std::ofstream(dir + "/scratch.ext4") << "disk of " << name;
    if (!keep.empty()) std::ofstream(dir + "/" + kRunDirKeep) << keep << "\n";
    if (lock) {
      auto l = lockRunDir(dir);
      EXPECT_TRUE(l) << l.error().message;
      if (l) lock->emplace(std::move(*l));
    } else {
      std::ofstream(dir + "/" + kRunDirLock);
    }
    return dir;
  }
};

TEST(RunDirs, AStaleDirectoryGivesItsDiskToItsSessionAndGoes) {
  StateDir s;
  std::string dir = s.runDir("vm-stale", s.sessions + "/s1/scratch.ext4");
  EXPECT_EQ(sweepStaleRunDirs(s.vms, s.sessions), 1u);
  EXPECT_FALSE(fs::exists(dir));
  std::ifstream kept(s.sessions + "/s1/scratch.ext4");
  std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "disk of vm-stale");
}

TEST(RunDirs, ARunningMachinesDirectoryIsLeftAlone) {
  StateDir s;
  std::optional<Fd> lock;
  std::string dir = s.runDir("vm-running", s.sessions + "/s1/scratch.ext4", &lock);
  EXPECT_EQ(sweepStaleRunDirs(s.vms, s.sessions), 0u);
  EXPECT_TRUE(fs::exists(dir + "/scratch.ext4"));
  EXPECT_FALSE(fs::exists(s.sessions + "/s1/scratch.ext4"));
  // One being set up (no lock yet, just made) is left alone too.
  fs::create_directories(s.vms + "/vm-new");
  EXPECT_EQ(sweepStaleRunDirs(s.vms, s.sessions), 0u);
  EXPECT_TRUE(fs::exists(s.vms + "/vm-new"));
}

// Attack: a note naming another place (outside the sessions, a session's
// other file, through ..), a disk that is a symlink, a session that already
// has a disk: nothing is moved, the stale directory still goes.
TEST(RunDirs, ANoteNamingAnythingButASessionsDiskMovesNothing) {
  StateDir s;
  std::ofstream(s.sessions + "/s1/manifest") << "baseline";
  const std::string outside = s.tmp.path() + "/elsewhere.ext4";
  for (const std::string& keep : {outside, s.sessions + "/s1/manifest", s.sessions + "/../victim/scratch.ext4",
                                  s.sessions + "/missing/scratch.ext4"}) {
    std::string dir = s.runDir("vm-hostile", keep);
    EXPECT_EQ(sweepStaleRunDirs(s.vms, s.sessions), 1u) << keep;
    EXPECT_FALSE(fs::exists(dir));
  }
  EXPECT_FALSE(fs::exists(outside));
  std::ifstream manifest(s.sessions + "/s1/manifest");
  std::string text;
  manifest >> text;
  EXPECT_EQ(text, "baseline");
  EXPECT_FALSE(fs::exists(s.tmp.path() + "/victim"));
  // A symlink in place of the disk is not moved into the session.
  std::string dir = s.runDir("vm-link", s.sessions + "/s1/scratch.ext4");
  fs::remove(dir + "/scratch.ext4");
  fs::create_symlink("/etc/passwd", dir + "/scratch.ext4");
  EXPECT_EQ(sweepStaleRunDirs(s.vms, s.sessions), 1u);
  EXPECT_FALSE(fs::exists(fs::symlink_status(s.sessions + "/s1/scratch.ext4")));
}

// Race: machines launching while another launch sweeps. A directory whose
// lock is made but not yet taken must never look stale (three VMs at once
// lost a run directory this way: "cannot create the scratch disk").
TEST(RunDirs, ADirectoryIsNeverSweptBetweenItsLockFileAndItsLock) {
  StateDir s;
  std::atomic<bool> done{false};
  std::thread sweeper([&] {
    while (!done) sweepStaleRunDirs(s.vms, s.sessions);
  });
  int lost = 0;
  for (int i = 0; i < 3000; ++i) {
    auto dir = TempDir::create(s.vms, "vm-");
    ASSERT_TRUE(dir) << dir.error().message;
    auto lock = lockRunDir(dir->path());
    if (!lock || !fs::exists(dir->path() + "/" + kRunDirLock)) ++lost;
  }
  done = true;
  sweeper.join();
  EXPECT_EQ(lost, 0);
}

}  // namespace
}  // namespace airlock::vm
