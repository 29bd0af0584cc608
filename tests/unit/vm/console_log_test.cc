// The host side stays bounded whatever the guest sends (issue 12, items 9
// and 10): console tails and drains, export limits against a fake guest.

#include "vm/console_log.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "vm/control_channel.h"
#include "vm/protocol.h"

namespace airlock::vm {
namespace {

using Clock = std::chrono::steady_clock;

long peakRssKiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// Attack: a 512 MiB console log without a newline (before: read whole, 1 GiB
// of memory). The tail reader reads a bounded window from the end.
TEST(ConsoleTail, HugeLogWithoutNewlinesIsReadInBoundedMemory) {
  auto dir = TempDir::create("/tmp", "console-tail-");
  ASSERT_TRUE(dir);
  std::string path = dir->path() + "/console.log";
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
  ASSERT_EQ(::ftruncate(fd.get(), off_t{512} << 20), 0);  // sparse: 512 MiB of NULs, no newline
  fd.reset();
  long before = peakRssKiB();
  auto t = Clock::now();
  auto lines = tailLines(path, 20);
  double took = std::chrono::duration<double>(Clock::now() - t).count();
  long grew = peakRssKiB() - before;
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LE(lines[0].size(), 1024u + 3);
  EXPECT_LT(grew, 16 << 10) << "peak RSS grew by " << grew << " KiB";
  EXPECT_LT(took, 1.0);
  std::printf("[ measured ] tail of a 512 MiB newline-free log: %.3f s, peak RSS +%ld KiB\n", took, grew);
}

TEST(ConsoleTail, LastLinesOfAnOrdinaryLog) {
  auto dir = TempDir::create("/tmp", "console-tail-");
  ASSERT_TRUE(dir);
  std::string path = dir->path() + "/log";
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + "\n";
  ASSERT_TRUE(writeFileAtomic(path, text, 0600));
  auto lines = tailLines(path, 3);
  EXPECT_EQ(lines, (std::vector<std::string>{"line 97", "line 98", "line 99"}));
  EXPECT_TRUE(tailLines(dir->path() + "/missing", 3).empty());
}

// Attack: the guest floods its console (before: every byte landed in the
// log file). The drain keeps the head, a marker and the latest output.
TEST(ConsoleDrain, FloodKeepsTheHeadAndTheLatestOutputUnderTheCap) {
  auto dir = TempDir::create("/tmp", "console-drain-");
  ASSERT_TRUE(dir);
  std::string path = dir->path() + "/console.log";
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Fd guest(sv[0]);
  ConsoleLimits limits{1024, 4096};
  auto drain = ConsoleDrain::start(Fd(sv[1]), path, limits);
  ASSERT_TRUE(drain) << drain.error().message;
  std::string boot = "BOOT" + std::string(2000, 'b');
  std::string flood(1 << 20, 'x');
  ASSERT_TRUE(writeAll(guest.get(), boot));
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(writeAll(guest.get(), flood));
  ASSERT_TRUE(writeAll(guest.get(), "END\n"));
  uint64_t total = boot.size() + 64 * flood.size() + 4;
  for (int i = 0; i < 500 && (*drain)->received() < total; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ((*drain)->received(), total);
  drain->reset();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_size), limits.headBytes + 2 * limits.tailBytes + 100);
  auto log = readFile(path);
  ASSERT_TRUE(log);
  EXPECT_TRUE(log->starts_with("BOOT"));
  EXPECT_TRUE(log->ends_with("xxEND\n"));
  EXPECT_NE(log->find("bytes of console output dropped here"), std::string::npos);
  std::printf("[ measured ] console drain: %llu bytes in, %lld bytes on disk\n",
              static_cast<unsigned long long>(total), static_cast<long long>(st.st_size));
}

/// A guest on a unix socket that says hello, then answers an export as told.
class FakeGuest {
 public:
  enum class Mode { Silent, Endless, SparseThenExit };
  explicit FakeGuest(Mode mode) : mode_(mode), dir_(*TempDir::create("/tmp", "fake-guest-")) {
    path_ = dir_.path() + "/control.sock";
    listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_.get(), 1), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeGuest() {
    stop_ = true;
    ::shutdown(conn_.get(), SHUT_RDWR);
    ::shutdown(listen_.get(), SHUT_RDWR);
    thread_.join();
  }
  const std::string& path() const { return path_; }
  /// Bytes of export stream the guest managed to hand to the host's socket.
  uint64_t sent() const { return sent_; }
  /// True once a send failed: the host closed its end.
  bool cutOff() const { return cutOff_; }

 private:
  void serve() {
    conn_.reset(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn_) return;
    std::string hello = protocol::encodeFrame(protocol::FrameType::kHello, 0, protocol::encodeHello("fake"));
    (void)writeAll(conn_.get(), hello);
    protocol::FrameDecoder decoder;
    char buf[4096];
    while (!stop_) {
      ssize_t n = ::recv(conn_.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      uint32_t exportChannel = 0;
      (void)decoder.consume(std::string_view(buf, static_cast<size_t>(n)), [&](protocol::Frame&& f) {
        if (f.type == protocol::FrameType::kExport) exportChannel = f.channel;
      });
      if (exportChannel == 0 || mode_ == Mode::Silent) continue;
      std::string frame =
          protocol::encodeFrame(protocol::FrameType::kStdout, exportChannel, std::string(protocol::kMaxChunk, '\0'));
      if (mode_ == Mode::SparseThenExit) {  // 64 MiB of zeros, then "x" and a clean exit
        for (int i = 0; i < 2048; ++i) (void)writeAll(conn_.get(), frame);
        (void)writeAll(conn_.get(), protocol::encodeFrame(protocol::FrameType::kStdout, exportChannel, "x"));
        (void)writeAll(conn_.get(), protocol::encodeFrame(protocol::FrameType::kExit, exportChannel,
                                                          protocol::encodeExit({false, 0})));
        continue;
      }
      while (!stop_) {
        if (::send(conn_.get(), frame.data(), frame.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(frame.size())) {
          cutOff_ = true;
          return;
        }
        sent_ += frame.size();
      }
    }
  }
  Mode mode_;
  TempDir dir_;
  std::string path_;
  Fd listen_, conn_;
  std::thread thread_;
  std::atomic<bool> stop_ = false, cutOff_ = false;
  std::atomic<uint64_t> sent_ = 0;
};

std::unique_ptr<ControlChannel> connectTo(const FakeGuest& guest) {
  auto ch = ControlChannel::connect(guest.path(), std::chrono::seconds(5), [] { return true; });
  EXPECT_TRUE(ch) << ch.error().message;
  if (!ch) return nullptr;
  EXPECT_TRUE((*ch)->waitReady(std::chrono::seconds(5)));
  return std::move(*ch);
}

// Attack: the export is never answered (before: the host waited forever).
TEST(ExportLimits, SilentGuestExportEndsAtTheInactivityLimit) {
  FakeGuest guest(FakeGuest::Mode::Silent);
  auto ch = connectTo(guest);
  ASSERT_TRUE(ch);
  auto dir = TempDir::create("/tmp", "export-");
  ASSERT_TRUE(dir);
  ExportLimits limits;
  limits.idle = std::chrono::milliseconds(300);
  auto t = Clock::now();
  auto r = ch->exportWorkspace(dir->path() + "/changes.tar", limits);
  double took = std::chrono::duration<double>(Clock::now() - t).count();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kVmFailed);
  EXPECT_NE(r.error().message.find("inactivity limit"), std::string::npos) << r.error().message;
  EXPECT_LT(took, 2.0);
  EXPECT_NE(ch->closedReason(), "");
}

// Attack: a guest that sends slowly but never stops hits the overall deadline.
TEST(ExportLimits, TricklingGuestExportEndsAtTheSizeScaledDeadline) {
  FakeGuest guest(FakeGuest::Mode::Endless);
  auto ch = connectTo(guest);
  ASSERT_TRUE(ch);
  auto dir = TempDir::create("/tmp", "export-");
  ASSERT_TRUE(dir);
  ExportLimits limits;
  limits.grace = std::chrono::milliseconds(300);
  limits.minBytesPerSecond = uint64_t{1} << 40;  // nothing is fast enough
  auto r = ch->exportWorkspace(dir->path() + "/changes.tar", limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kVmFailed);
  EXPECT_NE(r.error().message.find("missed its deadline"), std::string::npos) << r.error().message;
}

// Attack: an endless export stream (before: past the 16 GiB cap the host kept
// reading and discarding). The host stops reading at the cap.
TEST(ExportLimits, EndlessExportStreamIsCutAtTheCapAndNotReadFurther) {
  FakeGuest guest(FakeGuest::Mode::Endless);
  auto ch = connectTo(guest);
  ASSERT_TRUE(ch);
  auto dir = TempDir::create("/tmp", "export-");
  ASSERT_TRUE(dir);
  ExportLimits limits;
  limits.maxBytes = 1u << 20;
  std::string dest = dir->path() + "/changes.tar";
  auto r = ch->exportWorkspace(dest, limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUnsafeChangeSet);
  EXPECT_NE(r.error().message.find("exceeds the limit of 1 MiB"), std::string::npos) << r.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(dest.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_size), limits.maxBytes);
  for (int i = 0; i < 200 && !guest.cutOff(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(guest.cutOff()) << "the host still reads the guest: " << guest.sent() << " bytes sent";
  EXPECT_LT(guest.sent(), uint64_t{8} << 20);
}

// A host-side failure (a full disk) fails that export only: the rest of the
// stream is read and dropped, the channel stays open (an `airlock diff`
// must not end the session), and the next export works.
TEST(ExportLimits, AHostWriteFailureFailsThatExportAndKeepsTheChannel) {
  FakeGuest guest(FakeGuest::Mode::SparseThenExit);
  auto ch = connectTo(guest);
  ASSERT_TRUE(ch);
  auto full = ch->exportWorkspace("/dev/full", ExportLimits{});
  ASSERT_FALSE(full);
  EXPECT_NE(full.error().message.find("cannot write /dev/full"), std::string::npos) << full.error().message;
  EXPECT_EQ(ch->closedReason(), "");
  auto dir = TempDir::create("/tmp", "export-");
  ASSERT_TRUE(dir);
  auto again = ch->exportWorkspace(dir->path() + "/changes.tar", ExportLimits{});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, (uint64_t{64} << 20) + 1);
}

// Attack: a 1 GiB sparse file costs its full size on the host in transit.
// The export stream's all-zero pieces land as holes of changes.tar.
TEST(ExportLimits, ZerosOfTheExportStreamStaySparseOnTheHost) {
  FakeGuest guest(FakeGuest::Mode::SparseThenExit);
  auto ch = connectTo(guest);
  ASSERT_TRUE(ch);
  auto dir = TempDir::create("/tmp", "export-");
  ASSERT_TRUE(dir);
  std::string dest = dir->path() + "/changes.tar";
  auto r = ch->exportWorkspace(dest);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (uint64_t{64} << 20) + 1);
  struct stat st {};
  ASSERT_EQ(::stat(dest.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), *r);
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, uint64_t{1} << 20) << "the zeros took disk";
  std::printf("[ measured ] 64 MiB of zeros exported: %lld bytes, %lld on disk\n", static_cast<long long>(st.st_size),
              static_cast<long long>(st.st_blocks) * 512);
}

}  // namespace
}  // namespace airlock::vm
