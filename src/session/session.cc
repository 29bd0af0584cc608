#include "session/session.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/visible_text.h"
#include "session/layout.h"
#include "workspace/changeset.h"
#include "workspace/review.h"

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

bool sessionRunning(const std::string& sessionDir) {
  SessionLayout layout{sessionDir};
  return lockHeld(layout.runLock()) || lockHeld(layout.reviewLock());
}

namespace {

/// Whether the kept changes hold anything a review could still flush: not
/// only the agent's git metadata, which is never flushed (its commits came
/// back through git). Unreadable decisions count as flushable.
bool pendingIsFlushable(const SessionLayout& layout) {
  if (::access(layout.pendingChangeSet().c_str(), F_OK) != 0) return false;
  auto decisions = readFile(layout.pendingDecisions(), 64 << 20);
  if (!decisions) return true;
  const std::string git = std::string(workspace::decisionName(workspace::Decision::GitMetadata)) + " ";
  size_t start = 0;
  while (start < decisions->size()) {
    size_t end = decisions->find('\n', start);
    if (end == std::string::npos) end = decisions->size();
    if (end > start && decisions->compare(start, git.size(), git) != 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool sessionHasPending(const std::string& sessionDir) {
  SessionLayout layout{sessionDir};
  auto has = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  // A kept scratch disk holds changes only once the command ran (its
  // output file is made as it starts): a supervisor killed while it still
  // prepared the session left a disk nobody wrote to.
  if (pendingIsFlushable(layout) || has(layout.flushJournal()) ||
      (has(layout.keptScratch()) && has(layout.output())) || (has(layout.changeSet()) && !has(layout.reviewed())))
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
  // A bare id or name names a session of the sessions dir, never a
  // directory of the current one: a change set may have flushed a
  // look-alike session (with a `workspace` file naming another directory)
  // into the project.
  if (!arg.empty() && arg.find('/') == std::string::npos) {
    std::string byId = sessionsDir(stateDir) + "/" + arg;
    if (arg != "." && arg != ".." && ::lstat(byId.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      return checkedSessionDir(byId, arg);
    if (std::string byName = validSessionName(arg) ? sessionByName(stateDir, arg) : ""; !byName.empty())
      return checkedSessionDir(byName, arg);
    return failWith(exit_code::kUsage, "no session '{}' (`airlock ls --all` lists them; a session directory "
                    "elsewhere: give its path, e.g. ./{})", arg, arg);
  }
  if (::stat(arg.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return failWith(exit_code::kUsage, "no session directory {}", arg);
  return checkedSessionDir(resolvedPath(arg), arg);
}

namespace {

/// Where the names live: <stateDir>/names/<name>, a symlink to the session
/// directory (made with symlink(2), so two sessions never take one name).
std::string nameLink(const std::string& stateDir, const std::string& name) { return stateDir + "/names/" + name; }

}  // namespace

bool validSessionName(std::string_view name) {
  if (name.empty() || name.size() > 64 || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

std::string sessionByName(const std::string& stateDir, const std::string& name) {
  char target[4096];
  ssize_t n = ::readlink(nameLink(stateDir, name).c_str(), target, sizeof target - 1);
  if (n <= 0) return "";
  std::string dir(target, static_cast<size_t>(n));
  // Only a session of this state dir that still carries the name.
  if (!dir.starts_with(sessionsDir(stateDir) + "/") || sessionName(dir) != name) return "";
  return dir;
}

std::string sessionName(const std::string& sessionDir) {
  auto text = readFile(SessionLayout{sessionDir}.name(), 256);
  if (!text) return "";
  return text->substr(0, text->find('\n'));
}

void releaseSessionName(const std::string& stateDir, const std::string& sessionDir) {
  std::string name = sessionName(sessionDir);
  if (!name.empty() && sessionByName(stateDir, name) == sessionDir) ::unlink(nameLink(stateDir, name).c_str());
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

Result<bool> settleEmptyChangeSet(const std::string& sessionDir, const std::string& line) {
  SessionLayout layout{sessionDir};
  if (!workspace::changeSetIsEmpty(layout.changeSet())) return false;
  appendSessionLog(sessionDir, line);
  if (auto r = writeFileAtomic(layout.reviewed(), line + "\n", 0600); !r) return std::unexpected(r.error());
  return true;
}

namespace {

/// `word` as one shell word: as it is when it holds only safe characters,
/// else in single quotes (a ' inside becomes '\'').
std::string shellWord(const std::string& word) {
  bool safe = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                      "0123456789_-+./:@%,=") == std::string::npos;
  return safe ? word : shellQuoted(word);
}

}  // namespace

std::string resumeCommand(const std::string& stateDir, const std::string& sessionDir) {
  std::string dir = resolvedPath(sessionDir);
  std::string sessions = resolvedPath(sessionsDir(stateDir));
  if (dir.starts_with(sessions + "/") && dir.find('/', sessions.size() + 1) == std::string::npos) {
    if (std::string name = sessionName(dir); !name.empty() && resolvedPath(sessionByName(stateDir, name)) == dir)
      return "airlock review " + shellWord(name);
    return "airlock review -s " + shellWord(dir.substr(sessions.size() + 1));
  }
  return "airlock review -s " + shellWord(dir);
}

namespace {

/// An flock of `how` (LOCK_SH, LOCK_EX) on `path` (created 0600), waiting
/// for it: the exclusive holders of a workspace lock (`state rm`) hold it
/// for a moment.
Result<Fd> lockFile(const std::string& path, int how) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fail("cannot open the lock {}: {}", path, errnoText(errno));
  while (flock(fd.get(), how) != 0)
    if (errno != EINTR) return fail("cannot lock {}: {}", path, errnoText(errno));
  return fd;
}

}  // namespace

namespace {

/// Takes `name` for the session in `dir` (a name whose session is gone is
/// taken over). kUsage when another session has it.
Result<> claimName(const std::string& stateDir, const std::string& dir, const std::string& name) {
  if (auto r = makeDirs(stateDir + "/names", 0700); !r) return r;
  const std::string link = nameLink(stateDir, name);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::symlink(dir.c_str(), link.c_str()) == 0) return {};
    if (errno != EEXIST) return fail("cannot record the session name {}: {}", link, errnoText(errno));
    std::string other = sessionByName(stateDir, name);
    if (!other.empty())
      return failWith(exit_code::kUsage, "the name '{}' is taken by session {}; pick another --name, or remove "
                      "that session (airlock rm {}; airlock stop {} first if it runs)", name,
                      other.substr(other.rfind('/') + 1), name, name);
    ::unlink(link.c_str());  // its session is gone
  }
  return fail("cannot record the session name {}", link);
}

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const std::string& stateDir, const std::string& workspace,
                                               const std::string& name, const std::string& label) {
  if (!name.empty() && !validSessionName(name))
    return failWith(exit_code::kUsage, "--name '{}' is not a session name: use 1-64 letters, digits, '_', '.' or "
                    "'-', starting with a letter or digit", name);
  char* real = realpath(workspace.c_str(), nullptr);
  if (!real) return failWith(exit_code::kUsage, "workspace {} does not exist: {}", workspace, errnoText(errno));
  std::unique_ptr<Session> s(new Session());
  s->workspace_ = real;
  free(real);
  if (auto r = makeDirs(stateDir + "/locks", 0700); !r) return std::unexpected(r.error());
  auto shared = lockFile(lockPathFor(stateDir, s->workspace_), LOCK_SH);
  if (!shared) return std::unexpected(shared.error());
  s->workspaceLock_ = std::move(*shared);
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
  auto run = lockFile(SessionLayout{s->dir_}.runLock(), LOCK_EX);
  if (!run) return std::unexpected(run.error());
  s->runLock_ = std::move(*run);
  s->name_ = !name.empty() ? name : label + "-" + s->id_.substr(s->id_.rfind('-') + 1, 6);
  if (auto r = writeFileAtomic(SessionLayout{s->dir_}.name(), s->name_ + "\n", 0600); !r) return std::unexpected(r.error());
  if (auto r = claimName(stateDir, s->dir_, s->name_); !r) {
    (void)removeTree(s->dir_);
    return std::unexpected(r.error());
  }
  if (auto r = recordWorkspace(s->dir_, s->workspace_); !r) return std::unexpected(r.error());
  s->log_.reset(::open(SessionLayout{s->dir_}.log().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  s->log("session " + s->id_ + " on " + s->workspace_);
  return s;
}

Session::~Session() {
  endPhase();
  for (const auto& path : scratch_) (void)removeTree(path);
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

std::function<void(const std::string&)> Session::logger() const {
  auto file = std::make_shared<Fd>(log_ ? fcntl(log_.get(), F_DUPFD_CLOEXEC, 0) : -1);
  return [file](const std::string& line) {
    if (*file) writeAll(file->get(), stampedLine(visibleText(line)));
  };
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
