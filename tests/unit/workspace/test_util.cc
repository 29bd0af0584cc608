#include "test_util.h"

#include "support/scratch.h"
#include "workspace/git_config_paths.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

namespace airlock::workspace::test {

TempDir scratch() { return airlock::test::scratchDir("airlock-ws-test-"); }

void writeFile(const std::string& path, const std::string& content, unsigned mode) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  ::chmod(path.c_str(), mode);
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string sh(const std::string& cmd) {
  std::string out;
  ::setenv("AIRLOCK_TEST_SH_CMD", cmd.c_str(), 1);
  FILE* p = ::popen("exec bash -c \"$AIRLOCK_TEST_SH_CMD\"", "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  EXPECT_EQ(status, 0) << cmd << "\n" << out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string git(const std::string& dir, const std::string& args) {
  // Exported: `args` may chain more git commands ("add x && git commit"),
  // which must not read the user's or the system's config either (a machine
  // without a git identity failed their commits).
  return sh(
      "export GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent GIT_CONFIG_COUNT=3 GIT_CONFIG_KEY_0=user.name "
      "GIT_CONFIG_VALUE_0=Agent GIT_CONFIG_KEY_1=user.email GIT_CONFIG_VALUE_1=agent@example.com "
      "GIT_CONFIG_KEY_2=init.defaultBranch GIT_CONFIG_VALUE_2=main && cd '" +
      dir + "' && git -c advice.detachedHead=false " + args + " 2>&1");
}

uint64_t diskBytes(const std::string& path) {
  uint64_t total = 0;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  total += static_cast<uint64_t>(st.st_blocks) * 512;
  if (S_ISDIR(st.st_mode))
    for (const auto& e : std::filesystem::directory_iterator(path)) total += diskBytes(e.path().string());
  return total;
}

std::string treeListing(const std::string& root) {
  std::map<std::string, std::string> rows;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec); it != std::filesystem::end(it); ++it) {
    struct stat st {};
    std::string p = it->path().string();
    ::lstat(p.c_str(), &st);
    std::string rel = p.substr(root.size() + 1);
    std::string what;
    if (S_ISLNK(st.st_mode)) what = "l " + std::filesystem::read_symlink(p).string();
    else if (S_ISDIR(st.st_mode)) what = "d";
    else if (S_ISREG(st.st_mode)) what = "f " + readAll(p);
    else what = "special";
    rows[rel] = fmt::format("{} {:o}", what, st.st_mode & 07777);
  }
  std::string out;
  for (auto& [k, v] : rows) out += k + " " + v + "\n";
  return out;
}

Scenario::Scenario() : dir(scratch()) {
  ws = dir.path() + "/ws";
  session = dir.path() + "/session";
  state = dir.path() + "/state";
  std::filesystem::create_directories(ws);
  std::filesystem::create_directories(session);
}

void Scenario::snapshot() {
  wsFd.reset(::open(ws.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto r = takeSnapshot(ws, session + "/snapshot", rules);
  ASSERT_TRUE(r) << r.error().message;
  baseline = r->manifest;
  snapFd.reset(::open((session + "/snapshot").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

std::string Scenario::loadTar(const std::string& tar) {
  std::filesystem::remove_all(session + "/staged");
  auto cs = ChangeSet::fromTarBuffer(tar, session + "/staged");
  if (!cs) return cs.error().message;
  changes = std::move(*cs);
  return "";
}

void Scenario::loadDirs(const std::string& after) {
  std::filesystem::remove_all(session + "/staged");
  auto cs = ChangeSet::fromDirectories(session + "/snapshot", after, session + "/staged", rules);
  ASSERT_TRUE(cs) << cs.error().message;
  changes = std::move(*cs);
}

std::unique_ptr<ThreeWayDiff> Scenario::engine() {
  return std::make_unique<ThreeWayDiff>(baseline, *changes, rules, wsFd.get(), snapFd.get(), 1 << 20, umask);
}

DiffResult Scenario::diff() {
  auto r = engine()->run();
  EXPECT_TRUE(r) << r.error().message;
  if (!r) return {};
  classifyItems(r->items, baseline, HostView{wsFd.get(), &rules, gitConfigNamedPaths(ws)});
  return std::move(*r);
}

Result<FlushReport> Scenario::flushAll(const DiffResult& d, const FlushHooks& hooks) {
  std::vector<const DiffItem*> all;
  for (const auto& it : d.items) all.push_back(&it);
  FlushContext ctx{ws, session, state, hooks, owner, waiting};
  return flush(all, ctx);
}

}  // namespace airlock::workspace::test
