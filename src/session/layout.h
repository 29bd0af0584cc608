#pragma once
// The files of one session directory ($XDG_STATE_HOME/airlock/sessions/<id>,
// or a directory given to `airlock snapshot`), named in one place.

#include <string>

namespace airlock::session {

/// The paths of one session directory's files.
struct SessionLayout {
  std::string dir;  ///< the session directory (absolute)

  std::string snapshot() const { return dir + "/snapshot"; }      ///< private copy of the workspace (removed at close)
  std::string manifest() const { return dir + "/manifest"; }      ///< baseline manifest of the snapshot
  std::string ignore() const { return dir + "/ignore"; }          ///< the snapshot's ignore patterns
  std::string workspace() const { return dir + "/workspace"; }    ///< real path of the workspace (one line)
  std::string log() const { return dir + "/session.log"; }        ///< time-stamped log
  std::string changeSet() const { return dir + "/changes.tar"; }  ///< the guest's export (OCI layer tar)
  std::string egressLog() const { return dir + "/egress.log"; }   ///< what the firewall allowed and blocked
  std::string reviewed() const { return dir + "/reviewed"; }      ///< the last review's summary line
  std::string pendingChangeSet() const { return dir + "/pending/changes.tar"; }  ///< changes kept for later
  std::string pendingDecisions() const { return dir + "/pending/decisions"; }    ///< theirs, a line each (pending.h)
  std::string flushJournal() const { return dir + "/flush/journal"; }            ///< an interrupted flush
  std::string reviewLock() const { return dir + "/review.lock"; }  ///< flock held while a review of the session runs
  std::string runLock() const { return dir + "/session.lock"; }   ///< flock held by the process that owns the running session
  std::string name() const { return dir + "/name"; }              ///< the session's name (one line)
  std::string meta() const { return dir + "/session.json"; }      ///< what `airlock ls` shows: label, size, owner pid
  std::string exitCode() const { return dir + "/exit"; }          ///< the command's exit code, once it exited
  std::string output() const { return dir + "/output.log"; }      ///< a detached session's terminal output, raw
  std::string attachSocket() const { return "attach.sock"; }      ///< a detached session's attach socket, relative to dir
  std::string keptScratch() const { return dir + "/scratch.ext4"; }  ///< a dead detached session's scratch disk (its changes)
  std::string rootImage() const { return dir + "/root-image"; }      ///< the root image path a detached session booted (one line)
  std::string keptRootImage() const { return dir + "/root.img"; }    ///< a hard link of that image, the session's own
};

}  // namespace airlock::session
