#include "session/dead_session.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "session/layout.h"
#include "session/session.h"
#include "session/session_list.h"
#include "vm/launch_options.h"
#include "vm/run_dirs.h"

namespace airlock::session {

Result<bool> exportDeadSession(const std::string& stateDir, const std::string& dir, const SandboxLauncher& launch,
                               Ui& ui) {
  vm::sweepStaleRunDirs(stateDir + "/vms", sessionsDir(stateDir));
  SessionLayout layout{dir};
  // Only airlock's own detached sessions: a directory named by path is not
  // trusted with a disk and an image to boot.
  auto meta = readSessionMeta(dir);
  if (!dir.starts_with(sessionsDir(stateDir) + "/") || !meta || !meta->detached) return false;
  auto nothingToDo = [&] {
    return ::access(layout.keptScratch().c_str(), F_OK) != 0 || ::access(layout.changeSet().c_str(), F_OK) == 0;
  };
  if (nothingToDo()) return false;
  // The run lock, as the session's owner held it: one export at a time, and
  // after the janitor (which holds it while it keeps the disk). Looked at
  // again once held.
  Fd lock(::open(layout.runLock().c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock) return fail("cannot open {}: {}", layout.runLock(), errnoText(errno));
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    ui.progress("waiting for another airlock process exporting this session's changes");
    if (::flock(lock.get(), LOCK_EX) != 0) return fail("cannot lock {}: {}", layout.runLock(), errnoText(errno));
  }
  // A live diff's export that the supervisor's death cut short, and the
  // attach socket nobody answers any more.
  for (const auto& entry : listDir(dir).value_or(std::vector<std::string>{}))
    if (entry.starts_with("diff-") && entry.ends_with(".tar")) ::unlink((dir + "/" + entry).c_str());
  ::unlink((dir + "/" + layout.attachSocket()).c_str());
  if (nothingToDo()) return false;
  const std::string name = sessionName(dir).empty() ? dir : sessionName(dir);
  struct stat disk {};
  if (::lstat(layout.keptScratch().c_str(), &disk) != 0 || !S_ISREG(disk.st_mode) || disk.st_nlink != 1)
    return failWith(exit_code::kUnsafeChangeSet, "{} is not the session's disk (not a regular file of its own); "
                    "`airlock rm -f {}` discards the session", layout.keptScratch(), name);
  auto image = readFile(layout.rootImage(), 4096);
  std::string rootImage = image ? image->substr(0, image->find('\n')) : "";
  if (!rootImage.starts_with("/") || ::access(rootImage.c_str(), R_OK) != 0)
    return failWith(exit_code::kImage, "the changes of session {} are on its VM's disk, but the image it booted ({}) "
                    "is gone; `airlock rm -f {}` discards them", name, rootImage.empty() ? "not recorded" : rootImage,
                    name);
  ui.progress("session " + name + "'s process died before its changes were exported; exporting them from its VM's "
              "disk");
  appendSessionLog(dir, "export from the kept scratch disk of a dead session");
  vm::LaunchOptions options;
  options.rootImage = rootImage;
  options.scratchDisk = layout.keptScratch();
  options.notice = [&ui](const std::string& line) { ui.notice(line); };
  options.warn = [&ui](const std::string& line) { ui.warn(line); };
  auto sandbox = launch(options);
  if (!sandbox) return std::unexpected(sandbox.error());
  auto exported = exportChangeSet(**sandbox, layout.changeSet(), vm::ExportLimits{});
  if (!exported)  // what the guest left on its disk failed the export: its fault, not airlock's
    return failWith(exported.error().code == exit_code::kInternal ? exit_code::kUnsafeChangeSet : exported.error().code,
                    "{}; the disk is kept for another try, or `airlock rm -f {}` discards it", exported.error().message,
                    name);
  appendSessionLog(dir, fmt::format("change set: {} bytes (from the kept disk)", *exported));
  ::unlink(layout.keptScratch().c_str());
  ::unlink(layout.keptRootImage().c_str());
  // Nothing for a review, as at a session's end.
  if (auto r = settleEmptyChangeSet(dir, "the dead session's disk held no changes"); !r) return std::unexpected(r.error());
  return true;
}

}  // namespace airlock::session
