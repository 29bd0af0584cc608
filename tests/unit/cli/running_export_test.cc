// `airlock diff`'s client of a running session's export, against a fake
// supervisor on a real attach socket: a supervisor that ends before it
// answers means "ending" (the caller then waits for the end), never a
// failure; its answer's file name is untrusted.

#include "cli/running_export.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <thread>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "session/attach_frames.h"
#include "session/supervisor.h"
#include "support/scratch.h"

namespace airlock::cli {
namespace {

using session::AttachFrameType;
using session::encodeAttachFrame;

/// A supervisor's socket in a scratch session directory; `serve` runs on
/// a thread with the listening socket while the client asks.
class RunningExport : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }  // as airlock's main(): a reset socket is EPIPE

  Result<Fd> ask(std::function<void(Fd listener)> serve) {
    auto listener = session::listenAttachSocket(dir_.path());
    EXPECT_TRUE(listener) << listener.error().message;
    std::thread server(std::move(serve), std::move(*listener));
    auto result = exportRunningChanges(dir_.path(), "work");
    server.join();
    return result;
  }

  /// Waits for the client's connection and accepts it (blocking).
  static Fd acceptOne(const Fd& listener) {
    pollfd p{listener.get(), POLLIN, 0};
    ::poll(&p, 1, 10000);
    Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    char buf[64];
    (void)!::read(c.get(), buf, sizeof buf);  // the request
    return c;
  }

  TempDir dir_ = test::scratchDir("airlock-running-export-");
};

TEST_F(RunningExport, ASupervisorThatClosesItsSocketBeforeAcceptingMeansEnding) {
  auto result = ask([](Fd listener) {
    pollfd p{listener.get(), POLLIN, 0};
    ::poll(&p, 1, 10000);  // a connection waits in the backlog
    listener.reset();      // the loop ended: it is reset, never accepted
  });
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, exit_code::kBusy) << result.error().message;
}

TEST_F(RunningExport, ASupervisorThatHangsUpWithoutAnAnswerMeansEnding) {
  auto result = ask([](Fd listener) { acceptOne(listener); });
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, exit_code::kBusy) << result.error().message;
}

TEST_F(RunningExport, ALostConnectionAfterAnAnswerBeganIsAFailure) {
  auto result = ask([](Fd listener) {
    Fd c = acceptOne(listener);
    writeAll(c.get(), encodeAttachFrame(AttachFrameType::kOutput, "diff-abc.tar"));
  });
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, exit_code::kVmFailed) << result.error().message;
}

TEST_F(RunningExport, TheSupervisorsRefusalKeepsItsCodeAndMessage) {
  auto result = ask([](Fd listener) {
    Fd c = acceptOne(listener);
    writeAll(c.get(), encodeAttachFrame(AttachFrameType::kStderr, "airlock: the export passed its size limit\n") +
                          encodeAttachFrame(AttachFrameType::kExit, "65"));
  });
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, 65);
  EXPECT_EQ(result.error().message, "the export passed its size limit");
}

TEST_F(RunningExport, TheExportedFileIsOpenedAndUnlinked) {
  const std::string path = dir_.path() + "/diff-abc123.tar";
  std::ofstream(path) << "tar bytes";
  auto result = ask([](Fd listener) {
    Fd c = acceptOne(listener);
    writeAll(c.get(), encodeAttachFrame(AttachFrameType::kOutput, "diff-abc123.tar") +
                          encodeAttachFrame(AttachFrameType::kExit, "0"));
  });
  ASSERT_TRUE(result) << result.error().message;
  char buf[32] = {};
  EXPECT_EQ(::read(result->get(), buf, sizeof buf), 9);
  EXPECT_STREQ(buf, "tar bytes");
  EXPECT_FALSE(std::ifstream(path).good()) << "left in the session directory";
}

TEST_F(RunningExport, AFileNameOutsideTheSessionDirectoryIsRefused) {
  std::ofstream(dir_.path() + "/../diff-x.tar") << "elsewhere";
  for (std::string name : {"diff-/../../diff-x.tar", "../diff-x.tar", "state.json", "diff-x.tar.gz"}) {
    auto result = ask([name](Fd listener) {
      Fd c = acceptOne(listener);
      writeAll(c.get(),
               encodeAttachFrame(AttachFrameType::kOutput, name) + encodeAttachFrame(AttachFrameType::kExit, "0"));
    });
    ASSERT_FALSE(result) << name;
    EXPECT_EQ(result.error().code, exit_code::kInternal) << name;
  }
  std::remove((dir_.path() + "/../diff-x.tar").c_str());
}

}  // namespace
}  // namespace airlock::cli
