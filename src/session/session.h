#pragma once
// One `airlock run`: its state directory (<state>/sessions/<id>, <state>
// being HostDirs::state), its log file, the per-workspace lock, and the
// phase timings.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::session {

/// The directory holding every run's session: `stateDir`/sessions.
std::string sessionsDir(const std::string& stateDir);

/// A session named on the command line: a bare id or name (no '/') is
/// looked up only under sessionsDir(stateDir) (never in the current
/// directory), the id first; anything with a '/' is a path. Returns the absolute path; fails with
/// exit_code::kUsage naming `arg` when no such directory exists.
Result<std::string> resolveSessionDir(const std::string& stateDir, const std::string& arg);

/// True for a session name: 1-64 characters of [A-Za-z0-9_.-], the first a
/// letter or digit (docker's rule for container names).
bool validSessionName(std::string_view name);

/// The directory of the session named `name` under `stateDir`, "" when no
/// session has that name (a name whose session was removed is free).
std::string sessionByName(const std::string& stateDir, const std::string& name);

/// The name of the session in `sessionDir` ("" for a session made before names).
std::string sessionName(const std::string& sessionDir);

/// Frees the name of the session in `sessionDir` (before it is removed).
void releaseSessionName(const std::string& stateDir, const std::string& sessionDir);

/// The workspace recorded in `sessionDir` ("" when none is recorded).
std::string recordedWorkspace(const std::string& sessionDir);

/// Writes the workspace record (the real path of `workspace`) into `sessionDir`.
Result<> recordWorkspace(const std::string& sessionDir, const std::string& workspace);

/// Appends a time-stamped line to <sessionDir>/session.log (best effort).
void appendSessionLog(const std::string& sessionDir, const std::string& line);

/// When the change set of `sessionDir` holds no change, records `line` in
/// its log and as its review (SessionLayout::reviewed()): nothing waits for
/// a review. Returns whether it held none. Errors: the record could not be
/// written.
Result<bool> settleEmptyChangeSet(const std::string& sessionDir, const std::string& line);

/// The command that resumes the session's pending review: `airlock review -s ID`
/// for a session under sessionsDir(stateDir), else `airlock review -s
/// /ABS/PATH`; the argument shell-quoted when it needs it, so the line can be
/// pasted.
std::string resumeCommand(const std::string& stateDir, const std::string& sessionDir);

/// The workspace lock file of the project at the real path `realWorkspace`
/// under `stateDir`: every session on the project holds a shared flock on it
/// while it runs (sessions run side by side; their flushes are serialised by
/// the flush lock), so what needs the project idle (`state rm`) takes it
/// exclusively.
std::string lockPathFor(const std::string& stateDir, const std::string& realWorkspace);

/// Takes the review lock of `sessionDir` (an exclusive flock on its
/// review.lock, held until the Fd closes): a review deletes and replaces the
/// session's staging and pending changes, so two at once would destroy each
/// other's. kBusy when another process reviews the session now.
Result<Fd> lockForReview(const std::string& sessionDir);

/// True while the session is in use: the airlock process that owns
/// `sessionDir` is alive (it holds the session's run lock), or a review of it
/// runs (lockForReview()).
bool sessionRunning(const std::string& sessionDir);

/// True when `sessionDir` holds changes nobody has accepted or rejected yet:
/// a pending change set, a run's change set whose review never finished, or
/// an interrupted flush journal (in a review-XXXXXX staging directory).
bool sessionHasPending(const std::string& sessionDir);

class Session {
 public:
  /// Creates the session directory under sessionsDir(stateDir), exclusively,
  /// takes its run lock and the name `name` ("" = `label` + "-" + 6 hex
  /// digits of the id), and a shared hold on the lock of `workspace` (its
  /// real path; other sessions may run there too). Fails with kUsage when
  /// the workspace does not exist, or the name is invalid or taken.
  static Result<std::unique_ptr<Session>> open(const std::string& stateDir, const std::string& workspace,
                                               const std::string& name = "", const std::string& label = "session");
  ~Session();

  const std::string& id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  /// The workspace's real path.
  const std::string& workspace() const { return workspace_; }

  /// Starts phase `name` (ending the previous one) and logs `line`.
  void phase(const std::string& name, const std::string& line);
  /// Ends the current phase.
  void endPhase();
  /// Appends a line to the session log (session.log).
  void log(const std::string& line);
  /// A function that appends a line to the session log, usable from any
  /// thread and after the session is gone (it holds its own descriptor);
  /// control characters in the line are escaped.
  std::function<void(const std::string&)> logger() const;
  /// Per-phase durations: "  snapshot   0.12 s" lines and a total.
  std::string timings() const;
  /// Removes `path` (a tree under dir(), e.g. the snapshot) when the session
  /// ends, however it ends short of a crash: a failed boot leaves no copy of
  /// the workspace behind.
  void removeOnClose(std::string path) { scratch_.push_back(std::move(path)); }

 private:
  Session() = default;
  std::string id_, name_, dir_, workspace_;
  Fd workspaceLock_, runLock_, log_;
  std::vector<std::pair<std::string, double>> phases_;
  std::string current_;
  std::vector<std::string> scratch_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace airlock::session
