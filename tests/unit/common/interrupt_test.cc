// Ctrl-C, SIGTERM and SIGHUP while airlock prepares a session: recorded, not
// fatal, passed on to the child being waited for when only airlock got it,
// and a second one quits at once.

#include "common/interrupt.h"

#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/subprocess.h"

namespace airlock {
namespace {

using Clock = std::chrono::steady_clock;

TEST(InterruptScope, ASignalIsRecordedAndTheProcessGoesOn) {
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  {
    InterruptScope scope;
    EXPECT_EQ(interruptSignal(), 0);
    ::raise(SIGINT);
    EXPECT_EQ(interruptSignal(), SIGINT);
  }
  EXPECT_EQ(interruptSignal(), 0);
  struct sigaction after {};
  ::sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler) << "the previous disposition is back";
}

// The first `airlock run hermes` builds the image in a build VM, whose
// runner opens a scope inside the run's own: a signal during the build
// fails the build and then the run (the outer scope still has it), and
// only the outer scope's end puts the previous handler back.
TEST(InterruptScope, ANestedScopeLeavesTheSignalToTheOuterOne) {
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  {
    InterruptScope outer;
    {
      InterruptScope inner;
      ::raise(SIGINT);
      EXPECT_EQ(inner.end(), SIGINT);
    }
    EXPECT_TRUE(interruptible()) << "the inner scope's end ended the outer one";
    EXPECT_EQ(interruptSignal(), SIGINT) << "the inner scope's end cleared the signal";
    struct sigaction during {};
    ::sigaction(SIGINT, nullptr, &during);
    EXPECT_NE(during.sa_handler, before.sa_handler) << "the inner scope's end put the old handler back";
    EXPECT_EQ(outer.end(), SIGINT);
  }
  EXPECT_FALSE(interruptible());
  EXPECT_EQ(interruptSignal(), 0);
  struct sigaction after {};
  ::sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler) << "the previous disposition is back";
}

// `kill AIRLOCK_PID` reaches airlock alone: the program it waits for (here a
// shell standing for mmdebstrap) and that program's own children hear it
// as Ctrl-C, so the step fails at once.
TEST(InterruptScope, ASignalSentToAirlockEndsTheTreeItWaitsFor) {
  InterruptScope scope;
  std::thread killer([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGTERM);
  });
  const auto start = Clock::now();
  auto out = runCommand({"sh", "-c", "sleep 60; echo the shell went on"});
  killer.join();
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exitCode, 128 + SIGINT) << "passed on as Ctrl-C";
  EXPECT_EQ(out->stdoutText, "");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(interruptSignal(), SIGTERM);
}

// Outside a scope a command stays in airlock's process group: the
// terminal's Ctrl-C reaches it as before.
TEST(InterruptScope, OnlyAScopeGivesTheChildAGroupOfItsOwn) {
  auto outside = runCommand({"sh", "-c", "ps -o pgid= -p $$"});
  ASSERT_TRUE(outside) << outside.error().message;
  EXPECT_EQ(std::stol(outside->stdoutText), ::getpgrp());
  InterruptScope scope;
  auto inside = runCommand({"sh", "-c", "echo $$; ps -o pgid= -p $$"});
  ASSERT_TRUE(inside) << inside.error().message;
  const auto newline = inside->stdoutText.find('\n');
  EXPECT_EQ(std::stol(inside->stdoutText.substr(newline + 1)), std::stol(inside->stdoutText.substr(0, newline)));
}

TEST(InterruptScope, NothingStartsOnceInterrupted) {
  InterruptScope scope;
  ::raise(SIGINT);
  auto out = runCommand({"true"});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, 128 + SIGINT);
  EXPECT_NE(out.error().message.find("interrupted (INT)"), std::string::npos) << out.error().message;
}

TEST(InterruptScope, ASecondSignalEndsTheProcess) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InterruptScope scope;
    ::raise(SIGINT);
    if (interruptSignal() != SIGINT) ::_exit(3);
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

// A signal that arrives while the child is being started (after fork,
// before exec) is not lost in the child's copy of airlock's handler.
TEST(InterruptScope, ASignalDuringTheChildsStartIsNeverLost) {
  for (int i = 0; i < 60; ++i) {
    InterruptScope scope;
    std::thread killer([i] {
      std::this_thread::sleep_for(std::chrono::microseconds(100 * (i % 30)));
      ::kill(::getpid(), SIGTERM);
    });
    const auto start = Clock::now();
    auto out = runCommand({"sleep", "10"});
    killer.join();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << "round " << i << ": the child ran on";
    if (out) {
      EXPECT_EQ(out->exitCode, 128 + SIGINT) << "round " << i;
    }
  }
}

// A child that reads the terminal from its own process group fails (EIO)
// instead of stopping, which would hang airlock.
TEST(InterruptScope, AChildReadingTheTerminalFailsRatherThanStops) {
  int master = -1;
  pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // a session on the pty, in its foreground group
    InterruptScope scope;
    auto out = runCommand({"sh", "-c", "read x </dev/tty"});
    ::_exit(out && out->exitCode != 0 ? 0 : 1);
  }
  int status = -1;
  for (int i = 0; i < 100 && ::waitpid(pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ADD_FAILURE() << "the child stopped on the terminal and airlock waited for ever";
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  ::close(master);
}

// The second signal ends airlock and the child's group with it, even a
// child that ignores SIGINT.
TEST(InterruptScope, TheSecondSignalTakesTheChildAlong) {
  char path[] = "/tmp/airlock-interrupt-XXXXXX";
  ::close(::mkstemp(path));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InterruptScope scope;
    (void)runCommand({"sh", "-c", std::string("trap '' INT; echo $$ > ") + path + "; exec sleep 30"});
    ::_exit(0);
  }
  std::string child;
  for (int i = 0; i < 100 && child.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream(path) >> child;
  }
  ASSERT_FALSE(child.empty());
  ::kill(pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  // Killed is gone, even while a busy init has not reaped the zombie yet.
  auto killed = [&child] {
    if (::kill(std::stoi(child), 0) != 0) return true;
    std::string stat;
    std::getline(std::ifstream("/proc/" + child + "/stat"), stat);
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && stat.compare(paren, 3, ") Z") == 0;
  };
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = killed();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "the child " << child << " outlived airlock";
  if (!gone) ::kill(std::stoi(child), SIGKILL);
  ::unlink(path);
}

// Under nohup (SIGHUP ignored) a hangup is not an interrupt, and the
// children still ignore it; end() gives the caught signal back once.
TEST(InterruptScope, AnIgnoredSignalStaysIgnoredAndEndSaysWhatWasCaught) {
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGHUP, &ignore, &before);
  {
    InterruptScope scope;
    ::raise(SIGHUP);
    EXPECT_EQ(interruptSignal(), 0);
    auto out = runCommand({"sh", "-c", "kill -HUP $$; echo still-here"});
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(out->stdoutText, "still-here\n");
    ::raise(SIGINT);
    EXPECT_EQ(scope.end(), SIGINT);
    EXPECT_EQ(scope.end(), SIGINT);
    EXPECT_EQ(interruptSignal(), 0);
  }
  struct sigaction after {};
  ::sigaction(SIGHUP, &before, &after);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
}

// A detached session's supervisor blocks the three signals for its
// signalfd (session/supervisor.h). `airlock stop` or the Ctrl-C that `run
// -d` passes on while it prepares must still interrupt the preparation,
// also when it came before the scope began, and be blocked again after.
TEST(InterruptScope, ASupervisorsBlockedSignalIsCaughtAndBlockedAgainAfter) {
  sigset_t term, before;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &term, &before), 0);
  ::raise(SIGTERM);  // pending: `airlock stop` before the preparation began
  {
    InterruptScope scope;
    EXPECT_EQ(interruptSignal(), SIGTERM) << "the pending signal was not caught when the scope began";
    EXPECT_EQ(scope.end(), SIGTERM);
  }
  sigset_t now;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &now), 0);
  EXPECT_TRUE(sigismember(&now, SIGTERM)) << "the signal is no longer blocked for the supervisor's signalfd";
  ::raise(SIGTERM);  // after the scope: left pending for the signalfd, not fatal
  sigset_t pending;
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_TRUE(sigismember(&pending, SIGTERM));
  const timespec zero{0, 0};
  EXPECT_EQ(::sigtimedwait(&term, nullptr, &zero), SIGTERM);
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

TEST(InterruptedError, NamesTheSignalAndCarriesItsCode) {
  Error e = interruptedError(SIGTERM, "during the snapshot");
  EXPECT_EQ(e.message, "interrupted (TERM) during the snapshot");
  EXPECT_EQ(e.code, 128 + SIGTERM);
  EXPECT_TRUE(isInterruption(e.code));
  for (int code : {0, 64, 67, 72, 128, 128 + SIGKILL, 128 + SIGSEGV}) EXPECT_FALSE(isInterruption(code)) << code;
}

}  // namespace
}  // namespace airlock
