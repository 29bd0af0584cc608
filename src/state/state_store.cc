#include "state/state_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "common/fd.h"
#include "common/sha256.h"

namespace airlock::state {

namespace {

/// The state in the directory `dir` of `agent`: its project record, the
/// record's mtime (the last save) and the size of the files under home/.
SavedState readState(const std::string& agent, const std::string& dir) {
  namespace fs = std::filesystem;
  SavedState s;
  s.agent = agent;
  s.dir = dir;
  if (auto text = readFile(dir + "/project", 8192)) s.project = text->substr(0, text->find('\n'));
  struct stat st {};
  if (::lstat((dir + "/project").c_str(), &st) == 0)
    s.lastUsed = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir + "/home", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) s.bytes += it->file_size(ec);
  return s;
}

}  // namespace

std::string stateDirFor(const std::string& dataDir, const std::string& agent, const std::string& project) {
  return dataDir + "/state/" + agent + "/" + sha256Hex(project).substr(0, 16);
}

std::optional<SavedState> findState(const std::string& dataDir, const std::string& agent, const std::string& project) {
  const std::string dir = stateDirFor(dataDir, agent, project);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return readState(agent, dir);
}

Result<std::vector<SavedState>> listStates(const std::string& dataDir, const std::string& agent) {
  namespace fs = std::filesystem;
  std::vector<SavedState> out;
  const fs::path root = fs::path(dataDir) / "state";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& agentDir : fs::directory_iterator(root, ec)) {
    if (!agentDir.is_directory(ec) || agentDir.is_symlink(ec)) continue;
    const std::string name = agentDir.path().filename().string();
    if (!agent.empty() && name != agent) continue;
    for (const auto& entry : fs::directory_iterator(agentDir.path(), ec)) {
      if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
      out.push_back(readState(name, entry.path().string()));
    }
  }
  if (ec) return fail("cannot read {}: {}", root.string(), ec.message());
  std::sort(out.begin(), out.end(), [](const SavedState& a, const SavedState& b) {
    return std::tie(a.agent, a.project, a.dir) < std::tie(b.agent, b.project, b.dir);
  });
  return out;
}

}  // namespace airlock::state
