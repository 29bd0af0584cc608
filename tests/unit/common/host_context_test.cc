// readHostContext: the host facts read once, from a fake environment.

#include "common/host_context.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace airlock {
namespace {

/// readHostContext over `entries` ("NAME=value"), as `environ` would hold them.
HostContext contextOf(std::vector<std::string> entries) {
  std::vector<char*> environ;
  for (auto& e : entries) environ.push_back(e.data());
  environ.push_back(nullptr);
  return readHostContext(environ.data());
}

TEST(HostContext, AirlockCacheDirWinsOverXdg) {
  auto host = contextOf({"HOME=/home/u", "XDG_CACHE_HOME=/xdg/cache", "AIRLOCK_CACHE_DIR=/fast/airlock-cache"});
  EXPECT_EQ(host.dirs.cache, "/fast/airlock-cache");
}

TEST(HostContext, XdgDirsGetAnAirlockFolder) {
  auto host = contextOf(
      {"HOME=/home/u", "XDG_CACHE_HOME=/xdg/cache", "XDG_STATE_HOME=/xdg/state", "XDG_CONFIG_HOME=/xdg/config",
       "XDG_DATA_HOME=/xdg/data"});
  EXPECT_EQ(host.dirs.cache, "/xdg/cache/airlock");
  EXPECT_EQ(host.dirs.data, "/xdg/data/airlock");
  EXPECT_EQ(host.dirs.state, "/xdg/state/airlock");
  EXPECT_EQ(host.dirs.config, "/xdg/config/airlock");
  EXPECT_EQ(host.dirs.home, "/home/u");
}

TEST(HostContext, HomeIsTheFallback) {
  auto host = contextOf({"HOME=/home/someone"});
  EXPECT_EQ(host.dirs.cache, "/home/someone/.cache/airlock");
  EXPECT_EQ(host.dirs.state, "/home/someone/.local/state/airlock");
  EXPECT_EQ(host.dirs.config, "/home/someone/.config/airlock");
  EXPECT_EQ(host.dirs.data, "/home/someone/.local/share/airlock");
}

// An empty variable counts as unset, and XDG ignores a relative config home
// (the user config was never looked up relative to the current directory).
TEST(HostContext, EmptyOrRelativeValuesAreIgnored) {
  auto host = contextOf(
      {"HOME=/home/u", "AIRLOCK_CACHE_DIR=", "XDG_STATE_HOME=", "XDG_CONFIG_HOME=rel/config", "XDG_DATA_HOME=rel"});
  EXPECT_EQ(host.dirs.data, "/home/u/.local/share/airlock");
  EXPECT_EQ(host.dirs.cache, "/home/u/.cache/airlock");
  EXPECT_EQ(host.dirs.state, "/home/u/.local/state/airlock");
  EXPECT_EQ(host.dirs.config, "/home/u/.config/airlock");
}

// Without $HOME the passwd entry (or /tmp) is home: never a relative path.
TEST(HostContext, NoHomeVariableStillGivesAbsoluteDirs) {
  auto host = contextOf({});
  ASSERT_FALSE(host.dirs.home.empty());
  EXPECT_EQ(host.dirs.home.front(), '/');
  EXPECT_EQ(host.dirs.cache, host.dirs.home + "/.cache/airlock");
}

TEST(HostContext, PagerDefaultsToLess) {
  EXPECT_EQ(contextOf({"HOME=/h"}).terminal.pager, "less -R");
  EXPECT_EQ(contextOf({"HOME=/h", "PAGER="}).terminal.pager, "less -R");
  auto host = contextOf({"HOME=/h", "PAGER=most -s", "TERM=xterm-256color"});
  EXPECT_EQ(host.terminal.pager, "most -s");
  EXPECT_EQ(host.terminal.term, "xterm-256color");
}

TEST(HostContext, EnvironmentIsKeptWhole) {
  auto host = contextOf({"HOME=/h", "OPTS=a=b=c", "EMPTY=", "no-equals-sign"});
  EXPECT_EQ(host.getEnv("OPTS"), "a=b=c");
  EXPECT_TRUE(host.env.contains("EMPTY"));
  EXPECT_EQ(host.getEnv("EMPTY"), "");
  EXPECT_EQ(host.getEnv("UNSET"), "");
  EXPECT_EQ(host.env.size(), 3u);
}

TEST(HostContext, ProcessFacts) {
  auto host = contextOf({"HOME=/h"});
  EXPECT_EQ(host.uid, ::getuid());
  EXPECT_EQ(host.gid, ::getgid());
  ASSERT_NE(host.clock, nullptr);
  EXPECT_GT(host.clock->now().time_since_epoch().count(), 0);
  // The directory of this test binary (airlock-init is looked up next to airlock).
  EXPECT_EQ(::access((host.selfDir + "/unit_common").c_str(), X_OK), 0) << host.selfDir;
}

}  // namespace
}  // namespace airlock
