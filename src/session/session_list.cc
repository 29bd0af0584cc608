#include "session/session_list.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <set>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "session/layout.h"
#include "session/session.h"

namespace airlock::session {

Result<> writeSessionMeta(const std::string& dir, const SessionMeta& meta) {
  nlohmann::json j = {{"label", meta.label},   {"created", meta.created},      {"owner", meta.owner},
                      {"owner_start", meta.ownerStart},
                      {"cpus", meta.cpus},     {"memory_mib", meta.memoryMiB}, {"detached", meta.detached}};
  return writeFileAtomic(SessionLayout{dir}.meta(), j.dump() + "\n", 0600);
}

std::optional<SessionMeta> readSessionMeta(const std::string& dir) {
  auto text = readFile(SessionLayout{dir}.meta(), 1 << 16);
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  SessionMeta m;
  try {  // a field of the wrong type: no record, rather than no `airlock ls`
    m.label = j.value("label", "");
    m.created = j.value("created", int64_t{0});
    m.owner = j.value("owner", 0);
    m.ownerStart = j.value("owner_start", uint64_t{0});
    m.cpus = j.value("cpus", 0u);
    m.memoryMiB = j.value("memory_mib", 0u);
    m.detached = j.value("detached", false);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return m;
}

std::optional<int> recordedExitCode(const std::string& dir) {
  auto text = readFile(SessionLayout{dir}.exitCode(), 64);
  if (!text) return std::nullopt;
  int code = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), code);
  if (ec != std::errc() || end == text->data()) return std::nullopt;
  return code;
}

std::string stateText(const SessionEntry& e) {
  switch (e.state) {
    case SessionState::kRunning: return "running";
    case SessionState::kReviewing: return "reviewing";
    case SessionState::kPendingReview: return "pending review";
    case SessionState::kExited: return e.exitCode ? "exited (" + std::to_string(*e.exitCode) + ")" : "exited";
    case SessionState::kDead: return "dead";
  }
  return "dead";
}

namespace {

/// VmRSS of `pid` in bytes (0 when gone or unreadable).
uint64_t residentBytes(pid_t pid) {
  auto status = readFile("/proc/" + std::to_string(pid) + "/status", 1 << 16);
  if (!status) return 0;
  size_t at = status->find("\nVmRSS:");
  if (at == std::string::npos) return 0;
  uint64_t kib = 0;
  const char* p = status->data() + at + 7;
  while (*p == ' ' || *p == '\t') ++p;
  std::from_chars(p, status->data() + status->size(), kib);
  return kib * 1024;
}

void addChildren(pid_t pid, std::set<pid_t>& seen) {
  if (!seen.insert(pid).second) return;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& tid : listDir(tasks).value_or(std::vector<std::string>{})) {
    auto children = readFile(tasks + "/" + tid + "/children", 1 << 16);
    if (!children) continue;
    const char* p = children->data();
    const char* end = p + children->size();
    while (p < end) {
      pid_t child = 0;
      auto [next, ec] = std::from_chars(p, end, child);
      if (ec == std::errc()) addChildren(child, seen);
      p = next + 1;
    }
  }
}

}  // namespace

uint64_t processStartTime(pid_t pid) {
  auto stat = readFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat) return 0;
  // The command name (field 2) is in parentheses and may hold anything:
  // count fields from the last ')'.
  size_t at = stat->rfind(')');
  if (at == std::string::npos) return 0;
  const char* p = stat->data() + at + 1;
  const char* end = stat->data() + stat->size();
  for (int field = 3; field < 22 && p < end; ++field) {
    while (p < end && *p == ' ') ++p;
    while (p < end && *p != ' ') ++p;
  }
  while (p < end && *p == ' ') ++p;
  uint64_t ticks = 0;
  std::from_chars(p, end, ticks);
  return ticks;
}

bool signalSessionOwner(const std::string& dir, const SessionMeta& meta, int signo) {
  if (meta.owner <= 0 || meta.ownerStart == 0) return false;
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, meta.owner, 0)));
  if (!pidfd) return false;
  // The pidfd names one process for good: check it is the session's owner
  // (its start time) and still runs the session (the run lock), then signal it.
  if (processStartTime(meta.owner) != meta.ownerStart || !lockHeld(SessionLayout{dir}.runLock())) return false;
  return ::syscall(SYS_pidfd_send_signal, pidfd.get(), signo, nullptr, 0) == 0;
}

uint64_t processTreeMemory(pid_t pid) {
  if (pid <= 0) return 0;
  std::set<pid_t> tree;
  addChildren(pid, tree);
  uint64_t total = 0;
  for (pid_t p : tree) total += residentBytes(p);
  return total;
}

std::vector<SessionEntry> listSessions(const std::string& stateDir) {
  std::vector<SessionEntry> out;
  const std::string sessions = sessionsDir(stateDir);
  for (const auto& id : listDir(sessions).value_or(std::vector<std::string>{})) {
    if (id.starts_with("review-")) continue;
    SessionEntry e;
    e.id = id;
    e.dir = sessions + "/" + id;
    struct stat st {};
    if (::lstat(e.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    e.workspace = recordedWorkspace(e.dir);
    if (e.workspace.empty()) continue;  // not a session (snapshot -s elsewhere writes one)
    e.name = sessionName(e.dir);
    e.meta = readSessionMeta(e.dir);
    e.exitCode = recordedExitCode(e.dir);
    SessionLayout layout{e.dir};
    if (lockHeld(layout.runLock())) {
      e.state = SessionState::kRunning;
      // The owner's, when it is still that process (a rescue export holds the lock of a dead one).
      if (e.meta && processStartTime(e.meta->owner) == e.meta->ownerStart)
        e.hostMemoryBytes = processTreeMemory(e.meta->owner);
    } else if (lockHeld(layout.reviewLock())) {
      e.state = SessionState::kReviewing;
    } else if (sessionHasPending(e.dir)) {
      e.state = SessionState::kPendingReview;
    } else if (e.exitCode || pathExists(layout.reviewed())) {
      e.state = SessionState::kExited;
    } else {
      e.state = SessionState::kDead;
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const SessionEntry& a, const SessionEntry& b) { return a.id < b.id; });
  return out;
}

}  // namespace airlock::session
