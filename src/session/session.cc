#include "session/session.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/exit_codes.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "session/layout.h"

namespace airlock::session {
namespace {

/// "YYYYMMDD-HHMMSS-" + 64 random bits in hex: sortable by start time, and
/// not guessable or colliding (another user's session cannot be pre-created
/// under the id this one will take).
Result<std::string> newId() {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits))
    return fail("cannot read random bytes for a session id: {}", errnoText(errno));
  return fmt::format("{}-{:016x}", stamp, bits);
}

std::string stampedLine(const std::string& line) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", std::localtime(&now));
  return std::string(stamp) + " " + line + "\n";
}

}  // namespace

std::string lockPathFor(const std::string& stateDir, const std::string& realWorkspace) {
  return stateDir + "/locks/" + sha256Hex(realWorkspace).substr(0, 16) + ".lock";
}

Result<Fd> lockForReview(const std::string& sessionDir) {
  std::string path = SessionLayout{sessionDir}.reviewLock();
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fail("cannot open the review lock {}: {}", path, errnoText(errno));
  if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      return failWith(exit_code::kBusy, "session {} is being reviewed by another airlock process; finish that "
                      "review first", sessionDir);
    return fail("cannot lock {}: {}", path, errnoText(errno));
  }
  return fd;
}

bool sessionRunning(const std::string& stateDir, const std::string& sessionDir) {
  if (lockHeld(SessionLayout{sessionDir}.reviewLock())) return true;
  std::string ws = recordedWorkspace(sessionDir);
  if (ws.empty()) return false;
  std::string lockPath = lockPathFor(stateDir, ws);
  if (!lockHeld(lockPath)) return false;
  auto holder = readFile(lockPath, 4096);
  std::string id = sessionDir.substr(sessionDir.rfind('/') + 1);
  return holder && *holder == id;
}

bool sessionHasPending(const std::string& sessionDir) {
  SessionLayout layout{sessionDir};
  auto has = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  if (has(layout.pendingChangeSet()) || has(layout.flushJournal()) ||
      (has(layout.changeSet()) && !has(layout.reviewed())))
    return true;
  // A flush runs in the review's staging directory (review-XXXXXX/flush).
  for (const auto& name : listDir(sessionDir).value_or(std::vector<std::string>{}))
    if (name.starts_with("review-") && has(sessionDir + "/" + name + "/flush/journal")) return true;
  return false;
}

std::string sessionsDir(const std::string& stateDir) { return stateDir + "/sessions"; }

namespace {

/// `dir` itself when it is a session directory (it records its workspace),
/// else a usage error: a review deletes and writes files in the session
/// directory, so an ordinary directory must never be taken for one.
Result<std::string> checkedSessionDir(const std::string& dir, const std::string& arg) {
  struct stat st {};
  if (::lstat(SessionLayout{dir}.workspace().c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return failWith(exit_code::kUsage, "{} is not an airlock session (it records no workspace); give the id or "
                    "directory of a session made by airlock run, snapshot or review", arg);
  return dir;
}

}  // namespace

Result<std::string> resolveSessionDir(const std::string& stateDir, const std::string& arg) {
  struct stat st {};
  // A bare id names a session of the sessions dir, never a directory of the
  // current one: a change set may have flushed a look-alike session (with a
  // `workspace` file naming another directory) into the project.
  if (!arg.empty() && arg.find('/') == std::string::npos) {
    std::string byId = sessionsDir(stateDir) + "/" + arg;
    if (arg == "." || arg == ".." || ::stat(byId.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return failWith(exit_code::kUsage, "no session '{}' in {} (a session directory elsewhere: give its path, "
                      "e.g. ./{})", arg, sessionsDir(stateDir), arg);
    return checkedSessionDir(byId, arg);
  }
  if (::stat(arg.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return failWith(exit_code::kUsage, "no session directory {}", arg);
  return checkedSessionDir(resolvedPath(arg), arg);
}

std::string recordedWorkspace(const std::string& sessionDir) {
  auto text = readFile(SessionLayout{sessionDir}.workspace(), 1 << 16);
  if (!text) return "";
  std::string ws = *text;
  while (!ws.empty() && ws.back() == '\n') ws.pop_back();
  return ws;
}

Result<> recordWorkspace(const std::string& sessionDir, const std::string& workspace) {
  return writeFileAtomic(SessionLayout{sessionDir}.workspace(), resolvedPath(workspace) + "\n", 0600);
}

void appendSessionLog(const std::string& sessionDir, const std::string& line) {
  Fd log(::open(SessionLayout{sessionDir}.log().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (log) writeAll(log.get(), stampedLine(line));
}

namespace {

/// `word` as one shell word: as it is when it holds only safe characters,
/// else in single quotes (a ' inside becomes '\'').
std::string shellWord(const std::string& word) {
  bool safe = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                      "0123456789_-+./:@%,=") == std::string::npos;
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string resumeCommand(const std::string& stateDir, const std::string& sessionDir) {
  std::string dir = resolvedPath(sessionDir);
  std::string sessions = resolvedPath(sessionsDir(stateDir));
  if (dir.starts_with(sessions + "/") && dir.find('/', sessions.size() + 1) == std::string::npos)
    return "airlock review -s " + shellWord(dir.substr(sessions.size() + 1));
  return "airlock review -s " + shellWord(dir);
}

Result<std::unique_ptr<Session>> Session::open(const std::string& stateDir, const std::string& workspace, bool wait,
                                               const std::function<void(const std::string&)>& waiting) {
  char* real = realpath(workspace.c_str(), nullptr);
  if (!real) return failWith(exit_code::kUsage, "workspace {} does not exist: {}", workspace, errnoText(errno));
  std::unique_ptr<Session> s(new Session());
  s->workspace_ = real;
  free(real);
  std::string lockPath = lockPathFor(stateDir, s->workspace_);
  if (auto r = makeDirs(stateDir + "/locks", 0700); !r) return std::unexpected(r.error());
  s->lock_.reset(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!s->lock_) return fail("cannot open the workspace lock {}: {}", lockPath, errnoText(errno));
  if (flock(s->lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    auto holder = readFile(lockPath, 4096);
    std::string who = holder && !holder->empty() ? " (session " + *holder + ")" : "";
    if (!wait)
      return failWith(exit_code::kBusy, "another airlock session is running on {}{}; wait for it to finish, or pass --wait",
                      s->workspace_, who);
    if (waiting) waiting(fmt::format("waiting for the other session on {}{}", s->workspace_, who));
    if (flock(s->lock_.get(), LOCK_EX) != 0) return fail("cannot lock {}: {}", lockPath, errnoText(errno));
  }
  // The session directory is created exclusively: an existing directory of
  // that name (a collision, or one planted there) is never reused.
  std::string sessions = sessionsDir(stateDir);
  if (auto r = makeDirs(sessions, 0700); !r) return std::unexpected(r.error());
  for (int attempt = 0;; ++attempt) {
    auto id = newId();
    if (!id) return std::unexpected(id.error());
    s->id_ = std::move(*id);
    s->dir_ = sessions + "/" + s->id_;
    if (::mkdir(s->dir_.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt == 2)
      return fail("cannot create the session directory {}: {}", s->dir_, errnoText(errno));
  }
  if (ftruncate(s->lock_.get(), 0) == 0) (void)!pwrite(s->lock_.get(), s->id_.data(), s->id_.size(), 0);
  if (auto r = recordWorkspace(s->dir_, s->workspace_); !r) return std::unexpected(r.error());
  s->log_.reset(::open(SessionLayout{s->dir_}.log().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  s->log("session " + s->id_ + " on " + s->workspace_);
  return s;
}

Session::~Session() {
  endPhase();
  for (const auto& path : scratch_) (void)removeTree(path);
  if (lock_) (void)!ftruncate(lock_.get(), 0);
}

void Session::phase(const std::string& name, const std::string& line) {
  endPhase();
  current_ = name;
  started_ = std::chrono::steady_clock::now();
  log(name + ": " + line);
}

void Session::endPhase() {
  if (current_.empty()) return;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  phases_.emplace_back(current_, seconds);
  log(fmt::format("{} took {:.2f} s", current_, seconds));
  current_.clear();
}

void Session::log(const std::string& line) {
  if (log_) writeAll(log_.get(), stampedLine(line));
}

std::string Session::timings() const {
  std::string out;
  double total = 0;
  for (const auto& [name, seconds] : phases_) {
    out += fmt::format("  {:<10} {:>7.2f} s\n", name, seconds);
    total += seconds;
  }
  out += fmt::format("  {:<10} {:>7.2f} s\n", "total", total);
  return out;
}

}  // namespace airlock::session
