#pragma once
// One `airlock run`: its state directory ($XDG_STATE_HOME/airlock/sessions/<id>),
// its log file, the per-workspace lock, and the phase timings.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/fd.h"

namespace airlock::session {

class Session {
 public:
  /// Creates the session directory and takes the lock of `workspace` (its real
  /// path). When another session holds it: waits if `wait`, else fails
  /// (exit_code::kBusy)
  /// naming the other session and the --wait flag.
  static Result<std::unique_ptr<Session>> open(const std::string& workspace, bool wait);
  ~Session();

  const std::string& id() const { return id_; }
  const std::string& dir() const { return dir_; }
  /// The workspace's real path.
  const std::string& workspace() const { return workspace_; }

  /// Starts phase `name` (ending the previous one) and prints `line` as a
  /// progress line unless quiet.
  void phase(const std::string& name, const std::string& line);
  /// Ends the current phase.
  void endPhase();
  /// Appends a line to the session log (session.log).
  void log(const std::string& line);
  /// Per-phase durations: "  snapshot   0.12 s" lines and a total.
  std::string timings() const;
  void setQuiet(bool quiet) { quiet_ = quiet; }
  /// Removes `path` (a tree under dir(), e.g. the snapshot) when the session
  /// ends, however it ends short of a crash: a failed boot leaves no copy of
  /// the workspace behind.
  void removeOnClose(std::string path) { scratch_.push_back(std::move(path)); }

 private:
  Session() = default;
  std::string id_, dir_, workspace_;
  Fd lock_, log_;
  bool quiet_ = false;
  std::vector<std::pair<std::string, double>> phases_;
  std::string current_;
  std::vector<std::string> scratch_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace airlock::session
