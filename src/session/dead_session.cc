#include "session/dead_session.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "session/layout.h"
#include "session/session.h"
#include "vm/launch_options.h"

namespace airlock::session {

Result<bool> exportDeadSession(const std::string& dir, const SandboxLauncher& launch, Ui& ui) {
  SessionLayout layout{dir};
  if (::access(layout.keptScratch().c_str(), F_OK) != 0 || ::access(layout.changeSet().c_str(), F_OK) == 0)
    return false;
  // The run lock, as the session's owner held it: no second export, and
  // `ls` shows it running meanwhile.
  Fd lock(::open(layout.runLock().c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock) return fail("cannot open {}: {}", layout.runLock(), errnoText(errno));
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) return false;
  auto image = readFile(layout.rootImage(), 4096);
  std::string rootImage = image ? image->substr(0, image->find('\n')) : "";
  if (rootImage.empty() || ::access(rootImage.c_str(), R_OK) != 0)
    return failWith(exit_code::kImage, "the changes of session {} are on its VM's disk, but the image it booted ({}) "
                    "is gone; `airlock rm -f` discards them", dir, rootImage.empty() ? "not recorded" : rootImage);
  ui.progress("the session's process died before its changes were exported; exporting them from its VM's disk");
  appendSessionLog(dir, "export from the kept scratch disk of a dead session");
  vm::LaunchOptions options;
  options.rootImage = rootImage;
  options.scratchDisk = layout.keptScratch();
  options.notice = [&ui](const std::string& line) { ui.notice(line); };
  options.warn = [&ui](const std::string& line) { ui.warn(line); };
  auto sandbox = launch(options);
  if (!sandbox) return std::unexpected(sandbox.error());
  const std::string partial = layout.changeSet() + ".part";
  auto exported = (*sandbox)->exportWorkspace(partial, vm::ExportLimits{});
  (*sandbox)->stop();
  if (exported && ::rename(partial.c_str(), layout.changeSet().c_str()) != 0)
    exported = fail("cannot write {}: {}", layout.changeSet(), errnoText(errno));
  if (!exported) {
    ::unlink(partial.c_str());
    return std::unexpected(exported.error());
  }
  appendSessionLog(dir, fmt::format("change set: {} bytes (from the kept disk)", *exported));
  ::unlink(layout.keptScratch().c_str());
  return true;
}

}  // namespace airlock::session
