// The host half of the control protocol against a scripted guest on the other
// end of a socketpair: readiness, multiplexed commands, the stdin credit
// window, malformed frames, a guest that hangs up, and the workspace export
// with its limits. No VM: each test runs in milliseconds.

#include "vm/control_channel.h"

#include <sys/socket.h>
#include <fcntl.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"

namespace airlock::vm {
namespace {

using namespace std::chrono_literals;
using protocol::FrameType;

/// Longest any step waits for the other side; only reached when a test fails.
constexpr auto kStepTimeout = 5s;

/// Plays airlock-init on one end of the socketpair: a thread decodes every
/// frame the host sends into a queue; the test sends frames (or raw bytes)
/// from its own thread, as the real guest's single loop would.
class FakeGuest {
 public:
  explicit FakeGuest(Fd fd) : fd_(std::move(fd)), reader_([this] { readLoop(); }) {}
  ~FakeGuest() {
    hangUp();
    reader_.join();
  }

  void sendRaw(std::string_view bytes) {
    while (!bytes.empty()) {
      // MSG_NOSIGNAL: the host may already have shut the socket down.
      ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }
  void send(FrameType type, uint32_t channel, std::string_view payload) {
    sendRaw(protocol::encodeFrame(type, channel, payload));
  }
  void sendExit(uint32_t channel, protocol::ExitStatus status) {
    send(FrameType::kExit, channel, protocol::encodeExit(status));
  }

  /// The next frame from the host, or nullopt after `timeout` or at the end of the stream.
  std::optional<protocol::Frame> next(std::chrono::milliseconds timeout = kStepTimeout) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return !frames_.empty() || eof_; })) return std::nullopt;
    if (frames_.empty()) return std::nullopt;
    auto f = std::move(frames_.front());
    frames_.pop_front();
    return f;
  }
  /// True once the host closed or shut down its end (waits up to kStepTimeout).
  bool hostHungUp() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kStepTimeout, [&] { return eof_; });
  }
  /// The guest side of a VM that powered off: both directions end.
  void hangUp() { ::shutdown(fd_.get(), SHUT_RDWR); }
  std::string decodeError() {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  void readLoop() {
    protocol::FrameDecoder decoder;
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      auto ok = decoder.consume(std::string_view(buf, static_cast<size_t>(n)), [&](protocol::Frame&& f) {
        std::lock_guard lock(mutex_);
        frames_.push_back(std::move(f));
        changed_.notify_all();
      });
      if (!ok) {
        std::lock_guard lock(mutex_);
        error_ = ok.error();
        break;
      }
    }
    std::lock_guard lock(mutex_);
    eof_ = true;
    changed_.notify_all();
  }

  Fd fd_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<protocol::Frame> frames_;
  bool eof_ = false;
  std::string error_;
  std::thread reader_;  // last: starts after the members it uses
};

/// Collects one command's output from the channel's reader thread.
class Output {
 public:
  OutputHandlers handlers() {
    return {[this](std::string_view d) { append(out_, d); }, [this](std::string_view d) { append(err_, d); }};
  }
  std::string out() {
    std::lock_guard lock(mutex_);
    return out_;
  }
  std::string err() {
    std::lock_guard lock(mutex_);
    return err_;
  }
  /// Waits until stdout ends with `marker`: the reader thread has dispatched
  /// every frame the guest sent before it (frames are handled in order).
  bool waitForStdout(std::string_view marker) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kStepTimeout, [&] { return out_.ends_with(marker); });
  }

 private:
  void append(std::string& to, std::string_view d) {
    std::lock_guard lock(mutex_);
    to += d;
    changed_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string out_, err_;
};

class ControlChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    guest = std::make_unique<FakeGuest>(Fd(sv[1]));
    host = ControlChannel::fromFd(Fd(sv[0]));
  }

  /// Host sends hello-wait, guest says hello: the state every command test starts from.
  void boot() {
    guest->send(FrameType::kHello, 0, protocol::encodeHello("fake-init"));
    ASSERT_TRUE(host->waitReady(kStepTimeout));
  }

  /// Starts `argv` on the host and returns the command with the channel id
  /// the guest saw in its exec frame.
  std::pair<std::shared_ptr<RemoteCommand>, uint32_t> start(std::vector<std::string> argv, Output& output) {
    protocol::ExecRequest request;
    request.argv = argv;
    auto cmd = host->exec(request, output.handlers());
    EXPECT_TRUE(cmd) << (cmd ? "" : cmd.error().message);
    auto frame = guest->next();
    EXPECT_TRUE(frame);
    if (!cmd || !frame) return {nullptr, 0};
    EXPECT_EQ(frame->type, FrameType::kExec);
    auto decoded = protocol::decodeExec(frame->payload);
    EXPECT_TRUE(decoded);
    if (decoded) {
      EXPECT_EQ(decoded->argv, argv);
    }
    return {*cmd, frame->channel};
  }

  /// Reads stdin frames for `channel` until `bytes` arrived; fails on anything else.
  std::string readStdin(uint32_t channel, size_t bytes) {
    std::string got;
    while (got.size() < bytes) {
      auto f = guest->next();
      if (!f) {
        ADD_FAILURE() << "the host stopped sending stdin after " << got.size() << " of " << bytes << " bytes";
        break;
      }
      EXPECT_EQ(f->type, FrameType::kStdin);
      EXPECT_EQ(f->channel, channel);
      EXPECT_LE(f->payload.size(), protocol::kMaxChunk);
      EXPECT_FALSE(f->payload.empty()) << "an empty stdin frame is end of input";
      got += f->payload;
    }
    return got;
  }

  // The host is declared last so it is destroyed first (it shuts its end down).
  std::unique_ptr<FakeGuest> guest;
  std::unique_ptr<ControlChannel> host;
};

// --- readiness ---------------------------------------------------------------

TEST_F(ControlChannelTest, ReadyOnlyAfterAHelloOfThisProtocolVersion) {
  std::string wrongVersion = protocol::encodeU32(protocol::kVersion + 1) + protocol::encodeHello("x").substr(4);
  guest->send(FrameType::kHello, 0, wrongVersion);
  auto early = host->waitReady(20ms);
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().code, exit_code::kVmFailed);
  EXPECT_NE(early.error().message.find("did not come up"), std::string::npos) << early.error().message;
  guest->send(FrameType::kHello, 0, protocol::encodeHello("airlock-init"));
  EXPECT_TRUE(host->waitReady(kStepTimeout));
}

TEST_F(ControlChannelTest, GuestHangingUpDuringBootFailsWaitReady) {
  guest->hangUp();
  auto r = host->waitReady(kStepTimeout);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kVmFailed);
  EXPECT_NE(r.error().message.find("stopped during boot"), std::string::npos) << r.error().message;
}

// --- multiplexing --------------------------------------------------------------

TEST_F(ControlChannelTest, TwoCommandsAtOnceGetTheirOwnOutputAndExitStatus) {
  boot();
  Output a, b;
  auto [cmdA, idA] = start({"make", "-j2"}, a);
  auto [cmdB, idB] = start({"tail", "-f", "log"}, b);
  ASSERT_TRUE(cmdA && cmdB);
  EXPECT_NE(idA, idB);
  EXPECT_NE(idA, 0u) << "channel 0 is the VM itself";
  // Interleaved as the guest's poll loop sends them, some in one write.
  guest->send(FrameType::kStdout, idA, "a-out-1 ");
  guest->send(FrameType::kStderr, idB, "b-err-1 ");
  guest->sendRaw(protocol::encodeFrame(FrameType::kStdout, idB, "b-out-1 ") +
                 protocol::encodeFrame(FrameType::kStderr, idA, "a-err-1 ") +
                 protocol::encodeFrame(FrameType::kStdout, idA, "a-out-2"));
  guest->send(FrameType::kStdout, idB, {});  // end of B's stdout: not data
  guest->send(FrameType::kStdout, 999, "for a channel nobody opened");
  guest->sendExit(idB, {false, 3});
  guest->send(FrameType::kStderr, idB, "late, after the exit");
  guest->send(FrameType::kStderr, idA, "a-err-2");
  guest->sendExit(idA, {true, 9});

  auto exitB = cmdB->wait();
  ASSERT_TRUE(exitB) << exitB.error().message;
  EXPECT_EQ(exitB->shellCode(), 3);
  auto exitA = cmdA->wait();
  ASSERT_TRUE(exitA) << exitA.error().message;
  EXPECT_TRUE(exitA->signaled);
  EXPECT_EQ(exitA->shellCode(), 137);
  EXPECT_EQ(a.out(), "a-out-1 a-out-2");
  EXPECT_EQ(a.err(), "a-err-1 a-err-2");
  EXPECT_EQ(b.out(), "b-out-1 ");
  EXPECT_EQ(b.err(), "b-err-1 ");
  EXPECT_EQ(cmdA->startError(), "");
  EXPECT_EQ(host->closedReason(), "") << "ignored frames do not close the channel";
}

TEST_F(ControlChannelTest, WaitForReturnsNothingWhileTheCommandRuns) {
  boot();
  Output o;
  auto [cmd, id] = start({"sleep", "1"}, o);
  ASSERT_TRUE(cmd);
  EXPECT_FALSE(cmd->waitFor(10ms));
  guest->sendExit(id, {false, 0});
  auto done = cmd->waitFor(kStepTimeout);
  ASSERT_TRUE(done);
  ASSERT_TRUE(*done);
  EXPECT_EQ((*done)->shellCode(), 0);
}

TEST_F(ControlChannelTest, StartErrorIsKeptAndEscaped) {
  boot();
  Output o;
  auto [cmd, id] = start({"nope"}, o);
  ASSERT_TRUE(cmd);
  guest->send(FrameType::kError, id, "cannot run 'nope': No such file\x1b[2J");
  guest->sendExit(id, {false, 127});
  auto status = cmd->wait();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->shellCode(), 127);
  EXPECT_EQ(cmd->startError().find('\x1b'), std::string::npos) << "guest text reaches the terminal escaped";
  EXPECT_NE(cmd->startError().find("cannot run 'nope'"), std::string::npos);
}

TEST_F(ControlChannelTest, SignalsResizeAndEndOfInputReachTheGuest) {
  boot();
  Output o;
  auto [cmd, id] = start({"sh"}, o);
  ASSERT_TRUE(cmd);
  ASSERT_TRUE(cmd->signal(15));
  ASSERT_TRUE(cmd->resize(50, 132));
  ASSERT_TRUE(cmd->closeStdin());
  auto sig = guest->next();
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->type, FrameType::kSignal);
  EXPECT_EQ(sig->channel, id);
  EXPECT_EQ(protocol::decodeU32(sig->payload).value_or(0), 15u);
  auto size = guest->next();
  ASSERT_TRUE(size);
  EXPECT_EQ(size->type, FrameType::kResize);
  EXPECT_EQ(protocol::decodeResize(size->payload).value_or(std::pair<uint16_t, uint16_t>{}),
            (std::pair<uint16_t, uint16_t>{50, 132}));
  auto eof = guest->next();
  ASSERT_TRUE(eof);
  EXPECT_EQ(eof->type, FrameType::kStdin);
  EXPECT_EQ(eof->payload, "");
  ASSERT_TRUE(host->shutdown());
  auto off = guest->next();
  ASSERT_TRUE(off);
  EXPECT_EQ(off->type, FrameType::kShutdown);
  EXPECT_EQ(off->channel, 0u);
}

// --- the stdin credit window -------------------------------------------------------

TEST_F(ControlChannelTest, WriteStdinSomeTakesAtMostTheWindowUntilTheGuestAcknowledges) {
  boot();
  Output o;
  auto [cmd, id] = start({"cat"}, o);
  ASSERT_TRUE(cmd);
  std::string data(protocol::kStdinWindow + 5000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);

  // The window is larger than a socketpair's buffer: the guest reads while
  // the host sends, as a real guest does.
  auto first = std::async(std::launch::async, [&] { return cmd->writeStdinSome(data); });
  std::string got = readStdin(id, protocol::kStdinWindow);
  auto taken = first.get();
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_EQ(*taken, protocol::kStdinWindow);
  EXPECT_EQ(got, data.substr(0, protocol::kStdinWindow));

  auto none = cmd->writeStdinSome(std::string_view(data).substr(*taken));
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0u) << "no credit left: nothing is sent";
  EXPECT_FALSE(guest->next(20ms)) << "the host sent stdin beyond the window";

  guest->send(FrameType::kStdinAck, id, protocol::encodeU32(3000));
  guest->send(FrameType::kStdout, id, "acked-1");
  ASSERT_TRUE(o.waitForStdout("acked-1"));
  auto more = cmd->writeStdinSome(std::string_view(data).substr(*taken));
  ASSERT_TRUE(more);
  EXPECT_EQ(*more, 3000u) << "exactly the acknowledged bytes";
  EXPECT_EQ(readStdin(id, 3000), data.substr(*taken, 3000));

  // A guest acknowledging more than it was sent does not grow the window.
  guest->send(FrameType::kStdinAck, id, protocol::encodeU32(0xffffffff));
  guest->send(FrameType::kStdout, id, "acked-2");
  ASSERT_TRUE(o.waitForStdout("acked-2"));
  auto big = std::async(std::launch::async, [&] { return cmd->writeStdinSome(data); });
  readStdin(id, protocol::kStdinWindow);
  auto bigTaken = big.get();
  ASSERT_TRUE(bigTaken);
  EXPECT_EQ(*bigTaken, protocol::kStdinWindow);
  EXPECT_FALSE(guest->next(20ms)) << "the host sent stdin beyond the window";

  // Once the command exited, input is taken and dropped.
  guest->sendExit(id, {false, 0});
  ASSERT_TRUE(cmd->wait());
  auto after = cmd->writeStdinSome("ignored");
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, 7u);
}

TEST_F(ControlChannelTest, WriteStdinBlocksForCreditThenContinues) {
  boot();
  Output o;
  auto [cmd, id] = start({"cat"}, o);
  ASSERT_TRUE(cmd);
  std::string data(protocol::kStdinWindow + 100, 'y');
  auto writer = std::async(std::launch::async, [&] { return cmd->writeStdin(data); });
  EXPECT_EQ(readStdin(id, protocol::kStdinWindow).size(), protocol::kStdinWindow);
  EXPECT_FALSE(guest->next(30ms)) << "the host sent stdin beyond the window";
  EXPECT_EQ(writer.wait_for(0ms), std::future_status::timeout) << "writeStdin returned before all was sent";
  guest->send(FrameType::kStdinAck, id, protocol::encodeU32(protocol::kStdinWindow));
  EXPECT_EQ(readStdin(id, 100), std::string(100, 'y'));
  auto r = writer.get();
  EXPECT_TRUE(r) << r.error().message;
  guest->sendExit(id, {false, 0});
  EXPECT_TRUE(cmd->wait());
}

TEST_F(ControlChannelTest, WriteStdinBlockedOnCreditFailsWhenTheGuestHangsUp) {
  boot();
  Output o;
  auto [cmd, id] = start({"cat"}, o);
  ASSERT_TRUE(cmd);
  std::string data(protocol::kStdinWindow + 1, 'z');
  auto writer = std::async(std::launch::async, [&] { return cmd->writeStdin(data); });
  readStdin(id, protocol::kStdinWindow);
  guest->hangUp();
  auto r = writer.get();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot send input"), std::string::npos) << r.error().message;
}

// --- malformed frames and hang-ups ------------------------------------------------

struct BadStream {
  const char* name;
  std::string bytes;
  const char* says;  ///< expected in the error of every pending wait()
};

std::string header(uint8_t version, uint8_t type, uint16_t flags, uint32_t channel, uint32_t length) {
  std::string h = protocol::encodeFrame(FrameType::kStdout, channel, std::string(0, '\0'));
  h[0] = static_cast<char>(version);
  h[1] = static_cast<char>(type);
  h[2] = static_cast<char>(flags & 0xff);
  h[3] = static_cast<char>(flags >> 8);
  for (int i = 0; i < 4; ++i) h[8 + i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return h;
}

class MalformedFrameTest : public ControlChannelTest, public ::testing::WithParamInterface<BadStream> {};

TEST_P(MalformedFrameTest, ClosesTheChannelAndFailsEveryPendingWait) {
  boot();
  Output a, b;
  auto [cmdA, idA] = start({"one"}, a);
  auto [cmdB, idB] = start({"two"}, b);
  ASSERT_TRUE(cmdA && cmdB);
  // A good frame in the same write as the bad bytes is still delivered.
  guest->sendRaw(protocol::encodeFrame(FrameType::kStdout, idA, "before") + GetParam().bytes);
  if (std::string_view(GetParam().name) == "truncated") guest->hangUp();
  for (auto* cmd : {cmdA.get(), cmdB.get()}) {
    auto r = cmd->wait();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, exit_code::kVmFailed);
    EXPECT_NE(r.error().message.find("malformed frame"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(GetParam().says), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(a.out(), "before");
  EXPECT_TRUE(guest->hostHungUp()) << "the host keeps reading a stream that is out of sync";
  auto again = host->exec({.argv = {"three"}}, {});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("malformed frame"), std::string::npos) << again.error().message;
  auto input = cmdA->writeStdinSome("x");
  EXPECT_FALSE(input);
}

INSTANTIATE_TEST_SUITE_P(
    Streams, MalformedFrameTest,
    ::testing::Values(
        BadStream{"oversized", header(protocol::kVersion, 4, 0, 1, protocol::kMaxPayload + 1), "exceeds the limit"},
        BadStream{"bad_length", header(protocol::kVersion, 4, 0, 1, 0xffffffff), "exceeds the limit"},
        BadStream{"unknown_type", header(protocol::kVersion, 200, 0, 1, 0), "unknown frame type 200"},
        BadStream{"zero_type", header(protocol::kVersion, 0, 0, 1, 0), "unknown frame type 0"},
        BadStream{"bad_version", header(protocol::kVersion + 1, 4, 0, 1, 0), "protocol version"},
        BadStream{"flags", header(protocol::kVersion, 4, 1, 1, 0), "flags must be 0"},
        // The header promises 100 bytes, 10 arrive, then the guest hangs up.
        BadStream{"truncated", header(protocol::kVersion, 4, 0, 1, 100) + std::string(10, 'p'), "22 bytes into a frame"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST_F(ControlChannelTest, AnInvalidExitStatusEndsTheCommandWithCode255) {
  boot();
  Output o;
  auto [cmd, id] = start({"x"}, o);
  ASSERT_TRUE(cmd);
  guest->send(FrameType::kExit, id, "four");  // 4 bytes, an exit status is 5
  auto r = cmd->wait();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shellCode(), 255);
  EXPECT_NE(cmd->startError().find("invalid exit status"), std::string::npos) << cmd->startError();
}

TEST_F(ControlChannelTest, GuestHangingUpMidCommandFailsEveryWait) {
  boot();
  Output a, b;
  auto [cmdA, idA] = start({"one"}, a);
  auto [cmdB, idB] = start({"two"}, b);
  ASSERT_TRUE(cmdA && cmdB);
  guest->send(FrameType::kStdout, idA, "partial output");
  guest->hangUp();
  for (auto* cmd : {cmdA.get(), cmdB.get()}) {
    auto r = cmd->wait();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, exit_code::kVmFailed);
    EXPECT_NE(r.error().message.find("stopped before it finished"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("control channel closed"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(a.out(), "partial output");
  auto timed = cmdB->waitFor(kStepTimeout);
  ASSERT_TRUE(timed);
  EXPECT_FALSE(*timed);
  auto again = host->exec({.argv = {"three"}}, {});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, exit_code::kVmFailed);
}

// --- workspace export ---------------------------------------------------------------

class ExportTest : public ControlChannelTest {
 protected:
  void SetUp() override {
    ControlChannelTest::SetUp();
    auto d = TempDir::create(::testing::TempDir(), "airlock-export-");
    ASSERT_TRUE(d) << d.error().message;
    dir.emplace(std::move(*d));
    dest = dir->path() + "/changes.tar";
  }

  /// Runs exportWorkspace on a thread; returns the future and the export's channel id.
  std::pair<std::future<Result<uint64_t>>, uint32_t> startExport(const ExportLimits& limits) {
    auto result = std::async(std::launch::async, [this, limits] { return host->exportWorkspace(dest, limits); });
    auto frame = guest->next();
    EXPECT_TRUE(frame);
    if (!frame) return {std::move(result), 0};
    EXPECT_EQ(frame->type, FrameType::kExport);
    EXPECT_EQ(frame->payload, "");
    return {std::move(result), frame->channel};
  }

  std::optional<TempDir> dir;
  std::string dest;
};

/// Limits that never trigger in a test unless one is set tiny on purpose.
ExportLimits relaxed() {
  ExportLimits l;
  l.maxBytes = 1 << 20;
  l.idle = kStepTimeout;
  l.grace = kStepTimeout;
  return l;
}

TEST_F(ExportTest, WritesTheStreamWithAllZeroPiecesAsHoles) {
  boot();
  auto [result, id] = startExport(relaxed());
  std::string zeros(protocol::kMaxChunk, '\0');
  guest->send(FrameType::kStdout, id, "head");
  guest->send(FrameType::kStdout, id, zeros);
  guest->send(FrameType::kStdout, id, zeros);
  guest->send(FrameType::kStdout, id, "tail");
  guest->send(FrameType::kStdout, id, zeros);  // trailing zeros: the file still has its full size
  guest->send(FrameType::kStdout, id, {});
  guest->sendExit(id, {false, 0});
  auto written = result.get();
  ASSERT_TRUE(written) << written.error().message;
  std::string expected = "head" + zeros + zeros + "tail" + zeros;
  EXPECT_EQ(*written, expected.size());
  auto content = readFile(dest);
  ASSERT_TRUE(content);
  EXPECT_EQ(*content, expected);
  Fd fd(::open(dest.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  // The zero pieces after "head" are a hole (the first block holds "head").
  off_t hole = ::lseek(fd.get(), 0, SEEK_HOLE);
  EXPECT_LT(hole, static_cast<off_t>(expected.size())) << "no hole in " << dest;
}

TEST_F(ExportTest, OverTheSizeLimitIsAnUnsafeChangeSetAndClosesTheChannel) {
  boot();
  ExportLimits limits = relaxed();
  limits.maxBytes = 100;
  auto [result, id] = startExport(limits);
  guest->send(FrameType::kStdout, id, std::string(60, 'a'));
  guest->send(FrameType::kStdout, id, std::string(60, 'b'));  // 120 > 100
  guest->send(FrameType::kStdout, id, std::string(60, 'c'));
  auto r = result.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUnsafeChangeSet);
  EXPECT_NE(r.error().message.find("exceeds the limit"), std::string::npos) << r.error().message;
  EXPECT_TRUE(guest->hostHungUp()) << "nothing more is read from a guest past the limit";
  EXPECT_NE(host->closedReason().find("size limit"), std::string::npos) << host->closedReason();
}

TEST_F(ExportTest, SilencePastTheIdleLimitStopsTheExport) {
  boot();
  ExportLimits limits = relaxed();
  limits.idle = 50ms;
  auto [result, id] = startExport(limits);
  guest->send(FrameType::kStdout, id, "some");  // then nothing
  auto r = result.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kVmFailed);
  EXPECT_NE(r.error().message.find("inactivity limit"), std::string::npos) << r.error().message;
  EXPECT_TRUE(guest->hostHungUp());
}

TEST_F(ExportTest, MissingTheOverallDeadlineStopsTheExport) {
  boot();
  ExportLimits limits = relaxed();
  limits.grace = 50ms;
  limits.minBytesPerSecond = uint64_t{1} << 30;  // 1 GiB/s: a few bytes buy no time
  auto [result, id] = startExport(limits);
  guest->send(FrameType::kStdout, id, "trickle");
  auto r = result.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kVmFailed);
  EXPECT_NE(r.error().message.find("missed its deadline"), std::string::npos) << r.error().message;
}

// `airlock diff` beside a busy agent: a live export past its deadline or
// its size limit fails alone; the rest of its stream is dropped, and the
// channel (the session, its final export) goes on.
TEST_F(ExportTest, ALiveExportPastItsLimitsFailsAloneAndTheChannelGoesOn) {
  boot();
  ExportLimits limits = relaxed();
  limits.live = true;
  limits.grace = 50ms;
  limits.minBytesPerSecond = uint64_t{1} << 30;
  auto [late, lateId] = startExport(limits);
  guest->send(FrameType::kStdout, lateId, "trickle");
  auto r = late.get();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("missed its deadline"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("the session goes on"), std::string::npos) << r.error().message;
  // The guest finishes that export; what it sends is dropped.
  guest->send(FrameType::kStdout, lateId, "the rest");
  guest->send(FrameType::kStdout, lateId, {});
  guest->sendExit(lateId, {false, 0});
  limits = relaxed();
  limits.live = true;
  limits.maxBytes = 100;
  auto [big, bigId] = startExport(limits);
  guest->send(FrameType::kStdout, bigId, std::string(120, 'a'));
  r = big.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUnsafeChangeSet);
  guest->send(FrameType::kStdout, bigId, std::string(60, 'b'));
  guest->send(FrameType::kStdout, bigId, {});
  guest->sendExit(bigId, {false, 0});
  EXPECT_EQ(host->closedReason(), "") << "a live export's failure ended the channel";
  // The session's own export after them works.
  auto [final, finalId] = startExport(relaxed());
  guest->send(FrameType::kStdout, finalId, "tar");
  guest->send(FrameType::kStdout, finalId, {});
  guest->sendExit(finalId, {false, 0});
  auto done = final.get();
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(readFile(dest).value_or(""), "tar");
}

TEST_F(ExportTest, TheGuestsErrorIsReported) {
  boot();
  auto [result, id] = startExport(relaxed());
  guest->send(FrameType::kError, id, "cannot read src/x (it changed during the export)");
  guest->send(FrameType::kStdout, id, {});
  guest->sendExit(id, {false, 1});
  auto r = result.get();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("it changed during the export"), std::string::npos) << r.error().message;
  EXPECT_EQ(host->closedReason(), "") << "a failed export leaves the channel usable";
}

TEST_F(ExportTest, GuestHangingUpDuringTheExportIsAVmFailure) {
  boot();
  auto [result, id] = startExport(relaxed());
  guest->send(FrameType::kStdout, id, "half a tar");
  guest->hangUp();
  auto r = result.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kVmFailed);
  EXPECT_NE(r.error().message.find("stopped during the export"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace airlock::vm
