// Guest text that airlock prints after "airlock:" is escaped: a hostile guest
// cannot put terminal escapes into the user's terminal through an error.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "vm/control_channel.h"
#include "vm/protocol.h"
#include "support/scratch.h"

namespace airlock::vm {
namespace {

using protocol::FrameType;

TEST(GuestText, StartErrorWithTerminalEscapesIsShownEscaped) {
  TempDir dir = airlock::test::scratchDir("airlock-guest-text-");
  std::string path = dir.path() + "/control.sock";
  ASSERT_LT(path.size(), sizeof(sockaddr_un{}.sun_path)) << "TMPDIR too long for a unix socket path";
  Fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  // The hostile guest: says hello, answers the first command with an error
  // that retitles the window, clears the screen and hides the rest.
  std::thread guest([&] {
    Fd c(::accept(listener.get(), nullptr, nullptr));
    auto hello = protocol::encodeFrame(FrameType::kHello, 0, protocol::encodeHello("guest"));
    (void)!::write(c.get(), hello.data(), hello.size());
    protocol::FrameDecoder dec;
    char buf[4096];
    bool answered = false;
    while (!answered) {
      ssize_t n = ::read(c.get(), buf, sizeof buf);
      if (n <= 0) return;
      (void)dec.consume(std::string_view(buf, static_cast<size_t>(n)), [&](protocol::Frame&& f) {
        if (f.type != FrameType::kExec) return;
        auto err = protocol::encodeFrame(FrameType::kError, f.channel,
                                         "\x1b]0;pwned\x07\x1b[2J\x1b[8mno such file\xc2\x9b" "1m");
        auto exit = protocol::encodeFrame(FrameType::kExit, f.channel, protocol::encodeExit({false, 127}));
        (void)!::write(c.get(), err.data(), err.size());
        (void)!::write(c.get(), exit.data(), exit.size());
        answered = true;
      });
    }
    ::sleep(1);  // keep the connection until the host has read the frames
  });
  auto ch = ControlChannel::connect(path, std::chrono::seconds(5), [] { return true; });
  ASSERT_TRUE(ch) << ch.error().message;
  ASSERT_TRUE((*ch)->waitReady(std::chrono::seconds(5)));
  protocol::ExecRequest req;
  req.argv = {"x"};
  auto cmd = (*ch)->exec(req, {});
  ASSERT_TRUE(cmd) << cmd.error().message;
  auto st = (*cmd)->wait();
  ASSERT_TRUE(st) << st.error().message;
  std::string err = (*cmd)->startError();
  EXPECT_EQ(err, "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[8mno such file\\u009b1m");
  guest.join();
  ch->reset();
}

}  // namespace
}  // namespace airlock::vm
