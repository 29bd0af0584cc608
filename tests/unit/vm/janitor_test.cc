// The janitor's instructions when airlock dies (vm/janitor.h): a kept file
// is moved out of the run directory before that directory is removed.

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "common/paths.h"
#include "vm/janitor.h"

namespace airlock::vm {
namespace {

namespace fs = std::filesystem;

/// Runs the janitor's body on `instructions` as if airlock died after sending them.
void janitorSees(const std::string& instructions) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ASSERT_TRUE(writeAll(p[1], instructions));
  ::close(p[1]);
  EXPECT_EQ(runJanitor(p[0]), 0);
  ::close(p[0]);
}

// A detached session's supervisor killed: its VM's run directory goes, the
// scratch disk (the agent's changes) is kept in the session.
TEST(Janitor, KeepsTheScratchDiskAndRemovesTheRunDirectory) {
  auto tmp = TempDir::create("/tmp", "janitor-");
  ASSERT_TRUE(tmp);
  const std::string run = tmp->path() + "/vm-1", session = tmp->path() + "/session";
  fs::create_directories(run);
  fs::create_directories(session);
  std::ofstream(run + "/scratch.ext4") << "disk";
  std::ofstream(run + "/qemu.log") << "log";
  janitorSees("dir " + run + "\nkeep " + run + "/scratch.ext4\nas " + session + "/scratch.ext4\n");
  EXPECT_FALSE(fs::exists(run));
  std::ifstream kept(session + "/scratch.ext4");
  std::string content;
  kept >> content;
  EXPECT_EQ(content, "disk");
}

// A normal end clears everything: nothing is moved, nothing removed.
TEST(Janitor, ClearKeepsNothingAndRemovesNothing) {
  auto tmp = TempDir::create("/tmp", "janitor-");
  ASSERT_TRUE(tmp);
  const std::string run = tmp->path() + "/vm-1";
  fs::create_directories(run);
  std::ofstream(run + "/scratch.ext4") << "disk";
  janitorSees("dir " + run + "\nkeep " + run + "/scratch.ext4\nas " + tmp->path() + "/kept.ext4\nclear\n");
  EXPECT_TRUE(fs::exists(run + "/scratch.ext4"));
  EXPECT_FALSE(fs::exists(tmp->path() + "/kept.ext4"));
}

// Race: airlock dies; until its janitor has cleaned up, a sweep by another
// launch (vm/run_dirs.h) must not find the run directory's lock free and
// move or remove what a still-running QEMU uses. The janitor shares the lock
// from its start (a stand-in that only waits for the pipe's end).
TEST(Janitor, SharesTheRunDirectoryLockUntilItExits) {
  auto tmp = TempDir::create("/tmp", "janitor-");
  ASSERT_TRUE(tmp);
  const std::string stand = tmp->path() + "/janitor.sh", lockPath = tmp->path() + "/owner.lock";
  std::ofstream(stand) << "#!/bin/sh\nexec cat <&3 >/dev/null\n";
  ASSERT_EQ(::chmod(stand.c_str(), 0755), 0);
  auto free = [&] {
    Fd probe(::open(lockPath.c_str(), O_RDWR | O_CLOEXEC));
    return probe && ::flock(probe.get(), LOCK_EX | LOCK_NB) == 0;
  };
  std::optional<Janitor> janitor;
  {
    Fd lock(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(lock);
    ASSERT_EQ(::flock(lock.get(), LOCK_EX | LOCK_NB), 0);
    auto started = Janitor::start(stand, lock.get());
    ASSERT_TRUE(started) << started.error().message;
    janitor.emplace(std::move(*started));
  }  // airlock's own descriptor is gone, as when it dies
  EXPECT_FALSE(free()) << "the lock was free while the janitor ran";
  janitor.reset();  // the pipe's end: the janitor exits
  bool freed = false;
  for (int i = 0; i < 500 && !(freed = free()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(freed) << "the janitor kept the lock after it exited";
}

}  // namespace
}  // namespace airlock::vm
