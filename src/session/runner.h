#pragma once
// The runner of one session: the steps of DESIGN.md's "The job, in one run"
// carried out for a Plan, with the VM behind the sandbox seam
// (vm/sandbox.h), images behind ImageProvider and everything shown or asked
// behind the UI seam (session/ui.h). `airlock run` and `airlock run-image`
// are flag parsing + a Plan + Runner::run(); unit tests drive it with a
// FakeSandbox (tests/unit/session/runner_test.cc).
//
//   open      session directory and log, workspace lock, interrupted flush settled
//   snapshot  baseline manifest + private copy (kSnapshot)
//   image     the root filesystem (ImageProvider)
//   boot      the sandbox, the agent's home prepared
//   command   the agent, attached to the user's streams
//   export    the guest's /workspace changes into the session; the sandbox stopped
//   review    three-way diff, review gate, flush (session/review_session.h)
//   close     scratch removed; the session keeps its log and anything pending

#include <functional>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/file_lock.h"
#include "common/host_context.h"
#include "session/plan.h"
#include "session/session.h"
#include "session/ui.h"
#include "vm/sandbox.h"
#include "workspace/gate.h"

namespace airlock::session {

/// Turns an ImageSource of kind kReference or kAgentBuild into an erofs
/// image file (pulling and verifying, or building, as needed).
class ImageProvider {
 public:
  virtual ~ImageProvider() = default;
  /// The erofs image's path. Errors carry kImage, kVerification, kUsage...
  virtual Result<std::string> erofsImage(const ImageSource& source) = 0;
};

/// Boots a sandbox (vm::Machine::launch in airlock; a fake in tests).
using SandboxLauncher = std::function<Result<std::unique_ptr<vm::Sandbox>>(const vm::LaunchOptions&)>;

/// Exports `sandbox`'s /workspace changes into `changeSet` (an OCI layer
/// tar), then stops the sandbox. The tar is written as changeSet + ".part"
/// and renamed when complete: a process killed meanwhile leaves no partial
/// change set that would pass for a session's. Returns its size in bytes;
/// errors as Sandbox::exportWorkspace's.
Result<uint64_t> exportChangeSet(vm::Sandbox& sandbox, const std::string& changeSet, const vm::ExportLimits& limits);

/// What the runner works with besides the plan. Every reference must
/// outlive the runner (build the HostContext, UI and provider first).
struct RunnerDeps {
  const HostContext& host;
  Ui& ui;
  SandboxLauncher launch;
  ImageProvider& images;
};

/// How a session ended.
struct RunOutcome {
  int exitCode = 0;        ///< exit_code::mergeExitCodes(commandCode, the review's code)
  int commandCode = 0;     ///< the command's own exit code (128+N: killed by signal N)
  bool forced = false;     ///< the user ended the session before the command exited
  std::string sessionDir;  ///< "" without a session (no snapshot, no direct mode)
  std::optional<workspace::GateOutcome> review;  ///< the review's outcome (kSnapshot)
  std::string timings;     ///< per-phase durations (Session::timings)
};

/// Carries out one Plan (see the file comment); a step that needs an earlier
/// one fails with kInternal when called out of order.
class Runner {
 public:
  Runner(Plan plan, RunnerDeps deps);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  /// Every step in order. The error of a failed step carries its exit code
  /// (kVmFailed when the sandbox or the command's channel failed, with the
  /// crash reason); the sandbox is stopped and the snapshot removed when the
  /// runner is destroyed, however it ended. SIGINT, SIGTERM or SIGHUP before
  /// the command starts (common/interrupt.h) fails with 128 + the signal, and
  /// the session directory is removed too.
  Result<RunOutcome> run();

  /// The steps run() takes, in that order, for callers that need to stop
  /// between them (a detached session exports now and reviews later).
  /// open() then boot(), interruptible as run() says: a signal before the
  /// command starts fails with 128 + the signal, and the session directory
  /// goes with the runner.
  Result<> prepare();
  /// True once prepare() was interrupted: the session directory goes with
  /// the runner.
  bool discarded() const { return discard_; }
  /// Opens the session (kSnapshot, kDirect): directory, log, workspace lock,
  /// an interrupted flush settled, the snapshot taken. Nothing for other plans.
  Result<> open();
  /// The image, the sandbox, the agent's home. After open().
  Result<> boot();
  /// The command attached to the UI, then its state saved (Plan::state;
  /// a failure to save is a warning); returns its exit code. After boot().
  Result<int> runCommand();
  /// The guest's changes into the session, then the sandbox stopped. kSnapshot, after runCommand().
  Result<> exportChanges();
  /// A detached session's end: exportChanges(), then the changes wait for
  /// `airlock review NAME`, or when there are none the session is recorded
  /// as reviewed (nothing to review). Both said in the session log; returns
  /// whether changes wait. kSnapshot, after runCommand().
  Result<bool> keepForReview();
  /// The review gate on the exported changes. kSnapshot, after exportChanges().
  Result<workspace::GateOutcome> review();
  /// The session directory ("" before open(), and without a session).
  std::string sessionDir() const;
  /// The session's name ("" before open(), and without a session).
  std::string sessionName() const;
  /// Per-phase durations so far, the current phase ended ("" without a session).
  std::string timings();

 private:
  void step(const std::string& name, const std::string& line);
  Result<> takeSnapshot();
  void reportBlocked();
  Result<> useImage(vm::LaunchOptions& launch);
  Result<> prepareHome();
  Result<> runInGuest(const std::vector<std::string>& argv, const std::string& input, uint32_t uid);
  Result<FileLock> lockState();
  Result<bool> restoreState();
  Result<> writeSettings();
  Result<> writeHomeFiles(const std::vector<HomeFile>& files, bool onlyNew);
  Result<> writeCaBundle();
  Result<> deliverCredential();
  Result<std::string> readGuestFile(const std::string& path, size_t cap, uint32_t uid);
  void returnCredential();
  Result<state::UnpackSummary> saveState(std::chrono::seconds within);

  Plan plan_;
  RunnerDeps deps_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<vm::Sandbox> sandbox_;
  int commandCode_ = 0;
  bool commandStarted_ = false;
  bool forced_ = false;
  bool discard_ = false;  ///< interrupted before the command: the session directory goes too
};

}  // namespace airlock::session
