#pragma once
// One `airlock run`: its state directory (<state>/sessions/<id>, <state>
// being HostDirs::state), its log file, the per-workspace lock, and the
// phase timings.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::session {

/// The directory holding every run's session: `stateDir`/sessions.
std::string sessionsDir(const std::string& stateDir);

/// A session named on the command line: a bare id (no '/') is looked up only
/// under sessionsDir(stateDir) (never in the current directory); anything
/// with a '/' is a path. Returns the absolute path; fails with
/// exit_code::kUsage naming `arg` when no such directory exists.
Result<std::string> resolveSessionDir(const std::string& stateDir, const std::string& arg);

/// The workspace recorded in `sessionDir` ("" when none is recorded).
std::string recordedWorkspace(const std::string& sessionDir);

/// Writes the workspace record (the real path of `workspace`) into `sessionDir`.
Result<> recordWorkspace(const std::string& sessionDir, const std::string& workspace);

/// Appends a time-stamped line to <sessionDir>/session.log (best effort).
void appendSessionLog(const std::string& sessionDir, const std::string& line);

/// The command that resumes the session's pending review: `airlock review -s ID`
/// for a session under sessionsDir(stateDir), else `airlock review -s
/// /ABS/PATH`; the argument shell-quoted when it needs it, so the line can be
/// pasted.
std::string resumeCommand(const std::string& stateDir, const std::string& sessionDir);

/// The workspace lock file of the project at the real path `realWorkspace`
/// under `stateDir`: a session holds an exclusive flock on it while it runs.
std::string lockPathFor(const std::string& stateDir, const std::string& realWorkspace);

/// Takes the review lock of `sessionDir` (an exclusive flock on its
/// review.lock, held until the Fd closes): a review deletes and replaces the
/// session's staging and pending changes, so two at once would destroy each
/// other's. kBusy when another process reviews the session now.
Result<Fd> lockForReview(const std::string& sessionDir);

/// True while the session is in use: the airlock run that owns `sessionDir`
/// is alive (it still holds its workspace's lock, which names the session
/// id, under `stateDir`/locks), or a review of it runs (lockForReview()).
bool sessionRunning(const std::string& stateDir, const std::string& sessionDir);

/// True when `sessionDir` holds changes nobody has accepted or rejected yet:
/// a pending change set, a run's change set whose review never finished, or
/// an interrupted flush journal (in a review-XXXXXX staging directory).
bool sessionHasPending(const std::string& sessionDir);

class Session {
 public:
  /// Creates the session directory under sessionsDir(stateDir), exclusively,
  /// and takes the lock of `workspace` (its real path). When another session
  /// holds it: calls `waiting` with a line naming it and waits if `wait`,
  /// else fails (exit_code::kBusy) naming the other session and --wait.
  static Result<std::unique_ptr<Session>> open(const std::string& stateDir, const std::string& workspace, bool wait,
                                               const std::function<void(const std::string&)>& waiting);
  ~Session();

  const std::string& id() const { return id_; }
  const std::string& dir() const { return dir_; }
  /// The workspace's real path.
  const std::string& workspace() const { return workspace_; }

  /// Starts phase `name` (ending the previous one) and logs `line`.
  void phase(const std::string& name, const std::string& line);
  /// Ends the current phase.
  void endPhase();
  /// Appends a line to the session log (session.log).
  void log(const std::string& line);
  /// Per-phase durations: "  snapshot   0.12 s" lines and a total.
  std::string timings() const;
  /// Removes `path` (a tree under dir(), e.g. the snapshot) when the session
  /// ends, however it ends short of a crash: a failed boot leaves no copy of
  /// the workspace behind.
  void removeOnClose(std::string path) { scratch_.push_back(std::move(path)); }

 private:
  Session() = default;
  std::string id_, dir_, workspace_;
  Fd lock_, log_;
  std::vector<std::pair<std::string, double>> phases_;
  std::string current_;
  std::vector<std::string> scratch_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace airlock::session
