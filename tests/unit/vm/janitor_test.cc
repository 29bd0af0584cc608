// The janitor's instructions when airlock dies (vm/janitor.h): a kept file
// is moved out of the run directory before that directory is removed.

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace airlock::vm
