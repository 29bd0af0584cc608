#include "session/runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/interrupt.h"
#include "common/paths.h"
#include "common/visible_text.h"
#include "session/layout.h"
#include "session/review_session.h"
#include "session/session_list.h"
#include "state/state_archive.h"
#include "vm/guest_contract.h"
#include "workspace/flush.h"
#include "workspace/ignore.h"
#include "workspace/linked_git_dir.h"
#include "workspace/snapshot.h"

namespace airlock::session {
namespace {

namespace ws = airlock::workspace;

/// One of airlock's helper commands in the guest: `argv` as `uid`, in /,
/// with the helper PATH and the agent's HOME.
protocol::ExecRequest helperRequest(const std::vector<std::string>& argv, uint32_t uid) {
  protocol::ExecRequest request;
  request.argv = argv;
  request.env = {std::string("PATH=") + guest::kHelperPath, std::string("HOME=") + guest::kAgentHome};
  request.uid = request.gid = uid;
  request.cwd = "/";
  return request;
}

/// Waits for a helper command whose output a handler on the sandbox's
/// reader thread caps: polls every 200 ms and kills the command (SIGKILL)
/// once `over()` says the output passed its cap or `within` has passed.
/// The exit status; nullopt when the command was killed.
std::optional<Result<protocol::ExitStatus>> waitOrKill(vm::Command& cmd, std::chrono::seconds within,
                                                       const std::function<bool()>& over) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  std::optional<Result<protocol::ExitStatus>> status;
  while (!(status = cmd.waitFor(std::chrono::milliseconds(200))))
    if (over() || std::chrono::steady_clock::now() > deadline || interruptSignal() != 0) {
      (void)cmd.signal(SIGKILL);
      return std::nullopt;
    }
  return status;
}

/// The longest a helper command of the runner's may take in the guest
/// (writing files, unpacking the saved state: seconds under emulation).
constexpr std::chrono::seconds kHelperDeadline{300};

/// A directory (not a symlink to one) at `path`.
bool isDirectory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Runner::Runner(Plan plan, RunnerDeps deps) : plan_(std::move(plan)), deps_(std::move(deps)) {}

Runner::~Runner() {
  if (sandbox_) sandbox_->stop();
  // A session that never got to its command gives its name back (a retry
  // with the same --name works); its directory stays, `dead`, for its log.
  if (session_ && !commandStarted_) releaseSessionName(deps_.host.dirs.state, session_->dir());
  if (session_ && discard_) {
    const std::string dir = session_->dir();
    session_.reset();
    (void)removeTree(dir);
  }
}

std::string Runner::sessionDir() const { return session_ ? session_->dir() : std::string(); }

std::string Runner::sessionName() const { return session_ ? session_->name() : std::string(); }

std::string Runner::timings() {
  if (!session_) return "";
  session_->endPhase();
  return session_->timings();
}

Result<> Runner::open() {
  if (plan_.workspaceMode != WorkspaceMode::kSnapshot && plan_.workspaceMode != WorkspaceMode::kDirect) return {};
  auto session =
      Session::open(deps_.host.dirs.state, plan_.workspace, plan_.name, plan_.label.empty() ? "session" : plan_.label);
  if (!session) return std::unexpected(session.error());
  session_ = std::move(*session);
  SessionMeta meta;
  meta.label = plan_.label;
  meta.created = std::time(nullptr);
  meta.owner = ::getpid();
  meta.ownerStart = processStartTime(meta.owner);
  meta.cpus = plan_.machine.cpus;
  meta.memoryMiB = plan_.machine.memoryMiB;
  meta.detached = plan_.detached;
  if (auto r = writeSessionMeta(session_->dir(), meta); !r) return r;
  if (auto settled = settleInterruptedFlush(deps_.host, session_->workspace(), false, deps_.ui); !settled)
    return std::unexpected(settled.error());
  if (plan_.workspaceMode == WorkspaceMode::kDirect) {
    session_->log("direct mode: the live workspace is shared read-write; no snapshot, no review");
    return {};
  }
  SessionLayout layout{session_->dir()};
  session_->removeOnClose(layout.snapshot());
  // Another session's flush into the workspace finishes first, and none
  // starts while the snapshot is taken.
  auto flushes = ws::holdFlushes(session_->workspace(), deps_.host.dirs.state,
                                 [this](const std::string& line) { deps_.ui.say(line); });
  if (!flushes) return std::unexpected(flushes.error());
  return takeSnapshot();
}

/// The snapshot: baseline manifest and private copy in the session
/// directory, with .airlockignore and the plan's excludes applied.
Result<> Runner::takeSnapshot() {
  Session& s = *session_;
  SessionLayout layout{s.dir()};
  step("snapshot", "snapshot of " + s.workspace());
  ws::IgnoreRules rules;
  {
    Fd root(::open(s.workspace().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (auto r = rules.loadFile(root.get()); !r)  // a FIFO, a huge or unreadable .airlockignore: the user's to fix
      return std::unexpected(withCode(r.error(), exit_code::kHostNotReady));
  }
  for (const auto& e : plan_.excludes) rules.addPattern(e);
  for (const auto& w : rules.warnings()) deps_.ui.warn(w);
  // A linked worktree's repository lies outside it: the snapshot gets a
  // .git directory of its own (linked_git_dir.h).
  std::optional<ws::LinkedGitDir> linked;
  auto snap = ws::snapshotWorkspace(s.workspace(), layout.snapshot(), rules, ws::SnapshotOptions{}, &linked);
  if (!snap) return std::unexpected(snap.error());
  if (linked)
    s.log(fmt::format("snapshot: .git is the repository of this worktree ({}, HEAD and index from {}); the other "
                      "worktrees are left out",
                      linked->commonDir, linked->gitDir));
  for (const auto& w : snap->warnings) deps_.ui.warn(w);
  if (auto r = snap->manifest.save(layout.manifest()); !r) return r;
  if (auto r = writeFileAtomic(layout.ignore(), rules.userText(), 0600); !r) return r;
  s.log(fmt::format("snapshot: {} entries, {} excluded", snap->manifest.size(), snap->excluded.size()));
  // What never reaches the guest, and why; the names only on request.
  if (std::string kept = ws::keptOutSummary(*snap); !kept.empty()) {
    s.log(kept);
    deps_.ui.progress(kept + " (`airlock info --excluded` lists them)");
  }
  return {};
}

/// Puts the plan's root filesystem into `launch`.
Result<> Runner::useImage(vm::LaunchOptions& launch) {
  const ImageSource& image = plan_.image;
  if (image.value.empty()) return failWith(exit_code::kInternal, "the plan names no image");
  if (image.kind == ImageSource::Kind::kErofs) {
    launch.rootImage = image.value;
    return {};
  }
  if (image.kind == ImageSource::Kind::kPath) {
    struct stat st {};
    if (::stat(image.value.c_str(), &st) != 0)
      return failWith(exit_code::kImage,
                      "image {}: {}; set `image` to a rootfs directory, an erofs image file or an "
                      "image reference",
                      image.value, errnoText(errno));
    if (!S_ISDIR(st.st_mode)) {
      launch.rootImage = image.value;
      return {};
    }
  }
  // A reference, the agent's own image, or a rootfs directory: the provider
  // pulls, builds or packs it into an erofs image.
  auto erofs = deps_.images.erofsImage(image);
  if (!erofs) return std::unexpected(withCode(erofs.error(), exit_code::kImage));
  launch.rootImage = *erofs;
  return {};
}

/// Logs `line` as the start of phase `name` and shows it ("" = log only).
void Runner::step(const std::string& name, const std::string& line) {
  if (session_) session_->phase(name, line.empty() ? name : line);
  if (!line.empty()) deps_.ui.progress(line);
}

Result<> Runner::boot() {
  bool needsSession = plan_.workspaceMode == WorkspaceMode::kSnapshot || plan_.workspaceMode == WorkspaceMode::kDirect;
  if (needsSession && !session_) return failWith(exit_code::kInternal, "boot() before open()");
  if (sandbox_) return failWith(exit_code::kInternal, "boot() twice");
  vm::LaunchOptions launch = plan_.machine;
  step("image", plan_.imageLine);
  if (auto r = useImage(launch); !r) return r;
  step("boot", plan_.bootLine);
  SessionLayout layout{sessionDir()};
  switch (plan_.workspaceMode) {
    case WorkspaceMode::kNone:
      break;
    case WorkspaceMode::kShared:
      launch.workspaceDir = plan_.workspace;
      break;
    case WorkspaceMode::kSnapshot:
      launch.workspaceSnapshot = layout.snapshot();
      break;
    case WorkspaceMode::kDirect:
      launch.workspaceDir = session_->workspace();
      launch.workspaceReadWrite = true;
      break;
  }
  if (session_) {
    launch.egressNetwork.logPath = layout.egressLog();
    launch.egressNetwork.sessionLog = session_->logger();
  }
  // A detached session's supervisor may be killed: its janitor then keeps
  // the scratch disk (the agent's changes) in the session, and a later
  // review boots the recorded image with it to export them (dead_session.h).
  if (plan_.detached && plan_.workspaceMode == WorkspaceMode::kSnapshot) {
    launch.keepScratchAt = layout.keptScratch();
    launch.cleanupLock = layout.runLock();
    char* real = ::realpath(launch.rootImage.c_str(), nullptr);  // a config's relative path, resolved
    const std::string image = real ? real : launch.rootImage;
    std::free(real);
    // Kept by a hard link of the session's own, so an `image rm` or a
    // `system prune` of the cache leaves a rescue its image; where no link
    // can be made (another filesystem, another user's file), by its path.
    ::unlink(layout.keptRootImage().c_str());
    const bool linked = ::link(image.c_str(), layout.keptRootImage().c_str()) == 0;
    if (auto r = writeFileAtomic(layout.rootImage(), (linked ? layout.keptRootImage() : image) + "\n", 0600); !r)
      return r;
  }
  if (plan_.machineProgress) launch.progress = [&ui = deps_.ui](const std::string& line) { ui.progress(line); };
  launch.warn = [&ui = deps_.ui](const std::string& line) { ui.warn(line); };
  launch.notice = [&ui = deps_.ui](const std::string& line) { ui.notice(line); };
  auto sandbox = deps_.launch(launch);
  if (!sandbox) return std::unexpected(sandbox.error());
  sandbox_ = std::move(*sandbox);
  return prepareHome();
}

/// Runs a helper command in the guest as `uid`, feeding `input`; fails with
/// its stderr when it exits non-zero, or when it has not exited within
/// kHelperDeadline (killed: a guest that never answers hangs nothing).
Result<> Runner::runInGuest(const std::vector<std::string>& argv, const std::string& input, uint32_t uid) {
  const protocol::ExecRequest request = helperRequest(argv, uid);
  // The handler runs on the sandbox's reader thread, maybe after this
  // function gave up on a command: it owns what it touches.
  struct Sink {
    std::mutex mutex;
    std::string err;
  };
  auto sink = std::make_shared<Sink>();
  vm::OutputHandlers handlers;
  handlers.onStderr = [sink](std::string_view d) {
    std::lock_guard lock(sink->mutex);
    if (sink->err.size() < 4096) sink->err.append(d);
  };
  auto cmd = sandbox_->exec(request, handlers);
  if (!cmd) return std::unexpected(cmd.error());
  if (auto w = (*cmd)->writeStdin(input); !w) return w;
  (void)(*cmd)->closeStdin();
  auto status = waitOrKill(**cmd, kHelperDeadline, [] { return false; });
  if (!status && interruptSignal() != 0)
    return std::unexpected(interruptedError(interruptSignal(), fmt::format("while '{}' ran in the guest", argv[0])));
  if (!status) return fail("'{}' did not finish in the guest within {} s", argv[0], kHelperDeadline.count());
  if (!*status) return std::unexpected(status->error());
  if ((**status).shellCode() != 0) {
    std::lock_guard lock(sink->mutex);
    return fail("'{}' failed in the guest ({}): {}", argv[0], (**status).shellCode(),
                sink->err.empty() ? (*cmd)->startError() : visibleText(sink->err));
  }
  return {};
}

/// An image airlock did not build for the agent (a rootfs directory, an OCI
/// image) has its own owners: the agent's home is made the agent user's,
/// else the agent could not write its settings. Then the saved state, the
/// user's settings, the seed files where the state has none, and the spec's
/// home files (airlock's own files win over a saved copy).
Result<> Runner::prepareHome() {
  uint32_t uid = plan_.exec.uid;
  if (plan_.homeOnTmpfs) {
    // Mounted beside the home, filled with the image's files, then moved over it.
    auto r = runInGuest({"sh", "-c",
                         "set -e; t=/run/airlock/home; mkdir -p \"$t\"; mount -t tmpfs -o "
                         "mode=0700,uid=\"$1\",gid=\"$1\",nosuid,nodev,size=512m tmpfs \"$t\"; "
                         "if [ -d \"$2\" ]; then cp -a \"$2\"/. \"$t\"/; else mkdir -p \"$2\"; fi; "
                         "mount --move \"$t\" \"$2\"",
                         "sh", std::to_string(uid), guest::kAgentHome},
                        "", 0);
    if (!r)
      return failWith(exit_code::kImage,
                      "cannot put {} on a tmpfs in the guest: {}; the image needs sh, mount and "
                      "cp",
                      guest::kAgentHome, r.error().message);
  }
  if (plan_.chownHome) {
    auto r = runInGuest(
        {"sh", "-c", "mkdir -p \"$2\" && chown -R \"$1:$1\" \"$2\"", "sh", std::to_string(uid), guest::kAgentHome}, "",
        0);
    if (!r)
      return failWith(exit_code::kImage,
                      "cannot make {} writable for the agent user (uid {}) in the image: {}; the "
                      "image needs a writable root with sh, mkdir and chown",
                      guest::kAgentHome, uid, r.error().message);
  }
  auto restored = restoreState();
  if (!restored && isInterruption(restored.error().code)) return std::unexpected(restored.error());
  if (!restored) deps_.ui.warn("the agent's saved state was not restored: " + restored.error().message);
  auto writeAll = [&]() -> Result<> {
    if (auto r = writeSettings(); !r) return r;
    if (auto r = writeHomeFiles(plan_.seedFiles, true); !r) return r;
    if (auto r = writeHomeFiles(plan_.homeFiles, false); !r) return r;
    if (auto r = writeCaBundle(); !r) return r;
    return deliverCredential();
  };
  auto written = writeAll();
  if (!written && restored && *restored) {
    // The saved state holds something where a file goes (a directory, a
    // symlink loop): this run starts without it, and replaces it at the end.
    std::vector<std::string> wipe = {"sh", "-c", "cd \"$HOME\" && rm -rf -- \"$@\"", "sh"};
    wipe.insert(wipe.end(), plan_.state->paths.begin(), plan_.state->paths.end());
    if (auto r = runInGuest(wipe, "", uid); !r) return written;
    deps_.ui.warn("the agent's saved state was unusable (" + written.error().message + "); starting without it");
    written = writeAll();
  }
  return written;
}

/// The user's settings (Plan::settings) into $HOME, in place of whatever
/// the restored state has at those paths.
Result<> Runner::writeSettings() {
  if (!plan_.settings) return {};
  // Nothing found: only what a saved state has there goes (an image
  // without tar still runs).
  const bool none = plan_.settings->entries.empty();
  auto tar = none ? Result<std::string>("") : state::packSettings(plan_.settings->entries, plan_.exec.uid);
  if (!tar) return std::unexpected(tar.error());
  std::vector<std::string> argv = {
      "sh", "-c", none ? "cd \"$HOME\" && rm -rf -- \"$@\"" : "cd \"$HOME\" && rm -rf -- \"$@\" && exec tar -x -f -",
      "sh"};
  argv.insert(argv.end(), plan_.settings->paths.begin(), plan_.settings->paths.end());
  if (auto r = runInGuest(argv, *tar, plan_.exec.uid); !r)
    return failWith(exit_code::kVmFailed, "cannot copy your agent settings into the guest: {}", r.error().message);
  return {};
}

/// `files` into $HOME, as the agent: each replacing what is there, or with
/// `onlyNew` (seed files) only where nothing is yet.
Result<> Runner::writeHomeFiles(const std::vector<HomeFile>& files, bool onlyNew) {
  const char* write = "mkdir -p \"$(dirname \"$1\")\" && cat > \"$1\"";
  const std::string script =
      onlyNew ? std::string("if [ -e \"$1\" ] || [ -L \"$1\" ]; then cat > /dev/null; else ") + write + "; fi" : write;
  for (const auto& file : files) {
    std::string full = std::string(guest::kAgentHome) + "/" + file.path;
    auto r = runInGuest({"sh", "-c", script, "sh", full}, file.content, plan_.exec.uid);
    if (!r) return failWith(exit_code::kVmFailed, "cannot write {} in the guest: {}", full, r.error().message);
  }
  return {};
}

/// Plan::extraCaCertificates after the image's own bundle, at
/// guest::kCaBundle (an image without that bundle gets the extra ones only).
Result<> Runner::writeCaBundle() {
  if (plan_.extraCaCertificates.empty()) return {};
  auto r = runInGuest({"sh", "-c", "mkdir -p \"$(dirname \"$1\")\" && { cat \"$2\" 2>/dev/null; cat; } > \"$1\"", "sh",
                       guest::kCaBundle, guest::kSystemCaBundle},
                      plan_.extraCaCertificates, plan_.exec.uid);
  if (!r) return failWith(exit_code::kVmFailed, "cannot write the CA bundle in the guest: {}", r.error().message);
  return {};
}

/// Plan::credential into the guest: the file on the /run tmpfs (the
/// directory made the agent's by root, 0700; the file 0600), a symbolic
/// link to it at its path in $HOME in place of whatever is there.
Result<> Runner::deliverCredential() {
  if (!plan_.credential || !plan_.credential->content) return {};
  const DeliveredCredential& c = *plan_.credential;
  const std::string uid = std::to_string(plan_.exec.uid);
  auto dir = runInGuest(
      {"sh", "-c", "mkdir -p \"$1\" && chown \"$2:$2\" \"$1\" && chmod 0700 \"$1\"", "sh", guest::kCredentialDir, uid},
      "", 0);
  if (!dir)
    return failWith(exit_code::kVmFailed, "cannot prepare {} in the guest: {}", guest::kCredentialDir,
                    dir.error().message);
  const std::string file = std::string(guest::kCredentialDir) + "/" + c.path.substr(c.path.rfind('/') + 1);
  const std::string link = std::string(guest::kAgentHome) + "/" + c.path;
  auto r = runInGuest({"sh", "-c",
                       "umask 077 && cat > \"$1\" && mkdir -p \"$(dirname \"$2\")\" && rm -rf -- \"$2\" && "
                       "ln -s \"$1\" \"$2\"",
                       "sh", file, link},
                      *c.content, plan_.exec.uid);
  if (!r) return failWith(exit_code::kVmFailed, "cannot write the login into the guest: {}", r.error().message);
  if (session_) session_->log(fmt::format("login: delivered to {} (tmpfs), linked at {}", file, link));
  return {};
}

/// The file at `path` in the guest (absolute), read as `uid` by the
/// guest's cat: at most `cap` bytes, within 10 s (the command is killed
/// past either, and a late write of the guest's is dropped).
/// Errors: over the cap, too slow, no such file, the exec failed.
Result<std::string> Runner::readGuestFile(const std::string& path, size_t cap, uint32_t uid) {
  struct Sink {
    std::mutex mutex;
    std::string data;
    bool over = false;
  };
  auto sink = std::make_shared<Sink>();
  vm::OutputHandlers handlers;
  handlers.onStdout = [sink, cap](std::string_view d) {
    std::lock_guard lock(sink->mutex);
    if (sink->over) return;
    if (sink->data.size() + d.size() > cap) {
      sink->over = true;
      sink->data.clear();
      return;
    }
    sink->data.append(d);
  };
  auto cmd = sandbox_->exec(helperRequest({"sh", "-c", "exec cat -- \"$1\"", "sh", path}, uid), handlers);
  if (!cmd) return std::unexpected(cmd.error());
  (void)(*cmd)->closeStdin();
  auto status = waitOrKill(**cmd, std::chrono::seconds(10), [&sink] {
    std::lock_guard lock(sink->mutex);
    return sink->over;
  });
  std::lock_guard lock(sink->mutex);
  if (sink->over) {
    sink->data.clear();
    return fail("it is over {} KiB", cap / 1024);
  }
  if (!status) return fail("the guest did not send it in 10 s");
  if (!*status) return std::unexpected(status->error());
  if ((**status).shellCode() != 0) return fail("there is no such file in the VM");
  std::string data = std::move(sink->data);
  sink->over = true;  // a late write of the guest's is dropped
  return data;
}

/// Plan::credential read back as the agent left it (through its link in
/// $HOME: the agent may have rewritten it), with its account file when it
/// has one, and handed to its `returned`. Whatever happens, the stored
/// login is only ever replaced by `returned`'s decision.
void Runner::returnCredential() {
  if (!plan_.credential || !sandbox_) return;
  const DeliveredCredential& c = *plan_.credential;
  const std::string home = std::string(guest::kAgentHome) + "/";
  auto content = readGuestFile(home + c.path, c.maxBytes, plan_.exec.uid);
  Result<bool> kept = std::unexpected(Error{});
  if (!content && c.unreadable) {
    if (session_) session_->log("login: not read back: " + content.error().message);
    c.unreadable(content.error());
    return;
  }
  if (!content) {
    kept = std::unexpected(content.error());
  } else {
    // Who is logged in: best effort (a missing or oversized cache is "").
    std::string account;
    if (!c.accountPath.empty())
      if (auto a = readGuestFile(home + c.accountPath, c.maxBytes, plan_.exec.uid)) account = std::move(*a);
    kept = c.returned(*content, account);
  }
  if (!kept) {
    deps_.ui.warn("the login file in the VM was not kept (a stored login stays as it was): " + kept.error().message);
    if (session_) session_->log("login: not kept: " + kept.error().message);
  } else if (*kept) {
    if (!c.keptNotice.empty()) deps_.ui.notice(c.keptNotice);
    if (session_) session_->log("login: the agent's login was stored");
  }
}

/// The lock of the agent's saved state for this project (STATE/lock), held while a restore reads the saved tree and
/// while a save swaps in the new one, never while a guest works: sessions on one project never read a half-replaced
/// state, and the last save wins.
Result<FileLock> Runner::lockState() {
  const std::string& dir = plan_.state->dir;
  return FileLock::acquire(dir + "/lock", "saving the agent's state of this project",
                           [this](const std::string& line) { deps_.ui.progress(line); });
}

/// The saved state (Plan::state) into the agent's home, unpacked by the
/// guest's tar as the agent's uid (it can write nowhere else). True when
/// there was one.
Result<bool> Runner::restoreState() {
  if (!plan_.state) return false;
  const StatePlan& st = *plan_.state;
  const std::string saved = st.dir + "/home";
  if (!isDirectory(saved)) return false;
  const std::string tar = fmt::format("{}/restore-{}.tar", st.dir, ::getpid());
  Result<std::string> content = std::unexpected(Error{});
  {  // read under the lock; the guest, however slow, unpacks after it
    auto stateLock = lockState();
    if (!stateLock) return std::unexpected(stateLock.error());
    (void)::unlink(tar.c_str());  // a crashed run's
    auto size = state::packState(saved, tar, plan_.exec.uid);
    content = size ? readFile(tar, *size + 1) : Result<std::string>(std::unexpected(size.error()));
    ::unlink(tar.c_str());
  }
  if (!content) return std::unexpected(content.error());
  if (auto r = runInGuest({"sh", "-c", "cd \"$HOME\" && exec tar -x -f -"}, *content, plan_.exec.uid); !r)
    return std::unexpected(r.error());
  if (session_) session_->log(fmt::format("state: restored {} bytes of tar from {}", content->size(), saved));
  return true;
}

/// The agent's state (Plan::state) out of the guest as a tar stream, kept
/// as plain data (state::unpackState) in place of the previous one. The
/// guest's tar is the guest's: its stream is cut off past the size cap or
/// after `within`. Returns what was kept and left out.
Result<state::UnpackSummary> Runner::saveState(std::chrono::seconds within) {
  const StatePlan& st = *plan_.state;
  if (auto r = makeDirs(st.dir, 0700); !r) return std::unexpected(r.error());
  // Names of this process's own: another session on the project may save now too.
  const std::string tarPath = fmt::format("{}/save-{}.tar", st.dir, ::getpid());
  const std::string fresh = fmt::format("{}/home.new-{}", st.dir, ::getpid());
  const std::string old = fmt::format("{}/home.old-{}", st.dir, ::getpid());
  // The output handler runs on the sandbox's reader thread and may be
  // called after this function gave up on the command (a guest that keeps
  // sending): it owns what it touches, and stops writing once closed.
  struct Sink {
    std::mutex mutex;
    Fd out;
    uint64_t received = 0, cap = 0;
    bool over = false, writeFailed = false, closed = false;
  };
  auto sink = std::make_shared<Sink>();
  sink->out = Fd(::open(tarPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!sink->out) return fail("cannot write {}: {}", tarPath, errnoText(errno));
  // Room for the tar headers (pax entries take 1-3 KiB each) over the contents' cap.
  sink->cap = st.limits.maxBytes + st.limits.maxEntries * 3072;
  auto closeSink = [&sink] {
    std::lock_guard lock(sink->mutex);
    sink->closed = true;
    sink->out.reset();
    return std::pair{sink->over, sink->writeFailed};
  };
  // Credentials, and the user's settings (from the host, afresh each run),
  // are not kept with the state: left out by the guest's tar, and again here.
  std::vector<std::string> argv = {
      "sh", "-c", "cd \"$HOME\" && exec tar -c -f - --ignore-failed-read --anchored --no-wildcards \"$@\" 2>/dev/null",
      "sh"};
  std::vector<std::string> excluded = st.excluded;
  if (plan_.credential) excluded.push_back(plan_.credential->path);
  if (plan_.settings) excluded.insert(excluded.end(), plan_.settings->paths.begin(), plan_.settings->paths.end());
  for (const auto& path : excluded) argv.push_back("--exclude=" + path);
  argv.push_back("--");
  argv.insert(argv.end(), st.paths.begin(), st.paths.end());
  vm::OutputHandlers handlers;
  handlers.onStdout = [sink](std::string_view d) {
    std::lock_guard lock(sink->mutex);
    if (sink->closed || sink->over) return;
    if ((sink->received += d.size()) > sink->cap) {
      sink->over = true;
      return;
    }
    if (!writeAll(sink->out.get(), d)) sink->writeFailed = true;
  };
  auto cmd = sandbox_->exec(helperRequest(argv, plan_.exec.uid), handlers);
  if (!cmd) {
    closeSink();
    return std::unexpected(cmd.error());
  }
  (void)(*cmd)->closeStdin();
  auto status = waitOrKill(**cmd, within, [&sink] {
    std::lock_guard lock(sink->mutex);
    return sink->over;
  });
  if (!status) {
    const bool over = closeSink().first;
    (void)::unlink(tarPath.c_str());
    return over ? fail("the state is over its cap of {} MiB", st.limits.maxBytes >> 20)
                : fail("the guest did not finish sending it in {} s", within.count());
  }
  auto [over, writeFailed] = closeSink();
  if (!*status || over || writeFailed || (**status).shellCode() != 0) {
    (void)::unlink(tarPath.c_str());
    if (over) return fail("the state is over its cap of {} MiB", st.limits.maxBytes >> 20);
    if (!*status) return std::unexpected(status->error());
    if (writeFailed) return fail("cannot write {}", tarPath);
    return fail("the guest's tar exited with {} (an image without GNU tar?)", (**status).shellCode());
  }
  (void)removeTree(fresh);
  auto summary = state::unpackState(tarPath, fresh, st.paths, st.limits, excluded);
  (void)::unlink(tarPath.c_str());
  if (!summary) return std::unexpected(summary.error());
  // Only the swap is locked: the last session to save wins, and none reads
  // a half-replaced state.
  auto stateLock = lockState();
  if (!stateLock) {
    (void)removeTree(fresh);
    return std::unexpected(stateLock.error());
  }
  (void)removeTree(old);
  const std::string home = st.dir + "/home";
  if (isDirectory(home) && ::rename(home.c_str(), old.c_str()) != 0)
    return fail("cannot replace {}: {}", home, errnoText(errno));
  if (::rename(fresh.c_str(), home.c_str()) != 0) return fail("cannot replace {}: {}", home, errnoText(errno));
  (void)removeTree(old);
  if (auto r = writeFileAtomic(st.dir + "/project", st.project + "\n", 0600); !r) return std::unexpected(r.error());
  return summary;
}

/// Shows what the egress firewall blocked, if anything.
void Runner::reportBlocked() {
  if (!sandbox_->hasEgress()) return;
  std::string details = plan_.egressLogShown ? "shown above"
                        : session_           ? SessionLayout{session_->dir()}.egressLog()
                                             : "run again with --egress-log";
  if (auto lines = sandbox_->blockedEgress(); !lines.empty()) deps_.ui.blockedEgress(lines, details);
}

Result<int> Runner::runCommand() {
  if (!sandbox_) return failWith(exit_code::kInternal, "runCommand() before boot()");
  step("agent", plan_.commandLine);
  commandStarted_ = true;
  auto attached = deps_.ui.attach(*sandbox_, plan_.exec, plan_.pty);
  reportBlocked();
  if (!attached) {
    std::string crash = sandbox_->crashReason();
    sandbox_->stop();
    Error e = withCode(attached.error(), exit_code::kVmFailed);
    if (!crash.empty()) e.message += " (" + crash + ")";
    return std::unexpected(e);
  }
  commandCode_ = attached->code;
  forced_ = attached->forced;
  if (session_) {
    session_->log(fmt::format("{} exited with {}", plan_.review.who, commandCode_));
    (void)writeFileAtomic(SessionLayout{session_->dir()}.exitCode(), fmt::format("{}\n", commandCode_), 0600);
  }
  returnCredential();
  // A forced end (the escape keys) wants out soon: the save gets 15 s.
  if (plan_.state) {
    step("state", "");
    auto saved = saveState(forced_ ? std::chrono::seconds(15) : std::chrono::seconds(120));
    if (!saved) {
      deps_.ui.warn("the agent's state was not saved (the previous one is kept): " + saved.error().message);
    } else {
      if (session_)
        session_->log(fmt::format("state: saved {} entries, {} bytes in {}/home", saved->entries, saved->bytes,
                                  plan_.state->dir));
      if (saved->droppedCount > 0)
        deps_.ui.warn(fmt::format("the agent's saved state left out {}: {}", saved->droppedCount,
                                  fmt::join(saved->dropped, "; ")));
    }
  }
  return commandCode_;
}

Result<uint64_t> exportChangeSet(vm::Sandbox& sandbox, const std::string& changeSet, const vm::ExportLimits& limits) {
  // Under another name until complete: a process killed during the export
  // leaves no partial change set that would pass for the session's changes.
  const std::string partial = changeSet + ".part";
  auto exported = sandbox.exportWorkspace(partial, limits);
  sandbox.stop();
  if (exported && ::rename(partial.c_str(), changeSet.c_str()) != 0)
    exported = fail("cannot write {}: {}", changeSet, errnoText(errno));
  if (!exported) ::unlink(partial.c_str());
  return exported;
}

Result<> Runner::exportChanges() {
  if (!sandbox_ || !session_ || plan_.workspaceMode != WorkspaceMode::kSnapshot)
    return failWith(exit_code::kInternal, "exportChanges() needs a booted snapshot session");
  SessionLayout layout{session_->dir()};
  step("export", "collecting the guest's changes");
  auto exported =
      exportChangeSet(*sandbox_, layout.changeSet(), forced_ ? vm::forcedExportLimits() : vm::ExportLimits{});
  if (!exported)
    return failWith(
        exported.error().code == exit_code::kUnsafeChangeSet ? exit_code::kUnsafeChangeSet : exit_code::kVmFailed, "{}",
        exported.error().message);
  session_->log(fmt::format("change set: {} bytes", *exported));
  ::unlink(layout.keptRootImage().c_str());  // a rescue's: no disk is left to rescue
  return {};
}

Result<bool> Runner::keepForReview() {
  if (auto r = exportChanges(); !r) return std::unexpected(r.error());
  auto empty = settleEmptyChangeSet(session_->dir(), fmt::format("exit {}; the command changed nothing", commandCode_));
  if (!empty) return std::unexpected(empty.error());
  if (*empty) return false;
  session_->log(fmt::format("exit {}; the changes wait for `airlock review {}`", commandCode_, sessionName()));
  return true;
}

Result<workspace::GateOutcome> Runner::review() {
  if (!session_ || plan_.workspaceMode != WorkspaceMode::kSnapshot)
    return failWith(exit_code::kInternal, "review() needs a snapshot session");
  Session& s = *session_;
  SessionLayout layout{s.dir()};
  step("review", "review");
  ReviewRequest request;
  request.workspace = s.workspace();
  request.session = s.dir();
  request.changeSet = layout.changeSet();
  request.mode = plan_.review.mode;
  request.modeName = plan_.review.modeName;
  request.gitImport = plan_.review.gitImport;
  request.excludes = plan_.excludes;
  // A failed command's changes are not flushed by a policy: the user decides.
  bool byPolicy = plan_.review.mode == ws::ReviewMode::Auto || plan_.review.mode == ws::ReviewMode::All;
  if (commandCode_ != 0 && byPolicy && !plan_.review.acceptFailed) {
    request.mode = ws::ReviewMode::None;
    request.modeName = "none";
    std::string line = fmt::format(
        "{} exited with {}, so --review={} flushes nothing: its changes are kept pending "
        "(--accept-failed flushes them anyway)",
        plan_.review.who, commandCode_, plan_.review.modeName);
    s.log(line);
    deps_.ui.say(line);
  } else if (commandCode_ != 0) {
    // Before the user decides on its changes: the agent did not finish well.
    const char* signal = commandCode_ > 128 && commandCode_ < 128 + 32 ? sigabbrev_np(commandCode_ - 128) : nullptr;
    std::string line = signal != nullptr
                           ? fmt::format("{} was killed by SIG{} (exit {}): its changes may be incomplete",
                                         plan_.review.who, signal, commandCode_)
                           : fmt::format("{} exited with {}: its changes may be incomplete", plan_.review.who,
                                         commandCode_);
    s.log(line);
    deps_.ui.warn(line);
  }
  auto reviewed = reviewSession(deps_.host, request, deps_.ui);
  if (!reviewed) return std::unexpected(reviewed.error());
  if (!reviewed->outcome)  // the change set was just exported: there is always something to review
    return failWith(exit_code::kInternal, "the change set of session {} was not found for the review", s.dir());
  deps_.ui.reviewed(*reviewed->outcome, s.workspace());
  return std::move(*reviewed->outcome);
}

Result<> Runner::prepare() {
  // Ctrl-C before the agent runs ends the steps, and what they made goes
  // (the agent's own terminal, or a detached session's supervisor, takes it
  // from runCommand() on).
  InterruptScope interrupts;
  auto ready = open();
  if (ready) ready = boot();
  if (int sig = interrupts.end(); sig != 0) {
    discard_ = true;
    return std::unexpected(interruptedError(sig, "before " + plan_.review.who + " started; nothing was kept"));
  }
  return ready;
}

Result<RunOutcome> Runner::run() {
  RunOutcome out;
  auto ready = prepare();
  out.sessionDir = sessionDir();
  if (!ready) return std::unexpected(ready.error());
  auto code = runCommand();
  if (!code) return std::unexpected(code.error());
  out.commandCode = *code;
  out.forced = forced_;
  int reviewCode = 0;
  if (plan_.workspaceMode == WorkspaceMode::kSnapshot) {
    if (auto r = exportChanges(); !r) return std::unexpected(r.error());
    auto reviewed = review();
    if (!reviewed) return std::unexpected(reviewed.error());
    reviewCode = reviewed->exitCode();
    out.review = std::move(*reviewed);
  } else {
    sandbox_->stop();
  }
  out.timings = timings();
  out.exitCode = exit_code::mergeExitCodes(*code, reviewCode);
  if (session_)
    session_->log(fmt::format("exit {} ({})", out.exitCode,
                              out.exitCode == *code ? plan_.review.who + "'s own" : "airlock's review"));
  return out;
}

}  // namespace airlock::session
