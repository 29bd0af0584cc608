#include "vm/protocol.h"

#include <gtest/gtest.h>

#include <vector>

namespace airlock::protocol {
namespace {

std::vector<Frame> decodeAll(std::string_view bytes, size_t chunk, std::string* error = nullptr) {
  FrameDecoder decoder;
  std::vector<Frame> frames;
  while (!bytes.empty()) {
    auto part = bytes.substr(0, chunk);
    bytes.remove_prefix(part.size());
    auto ok = decoder.consume(part, [&](Frame&& f) { frames.push_back(std::move(f)); });
    if (!ok) {
      if (error) *error = ok.error();
      break;
    }
  }
  return frames;
}

TEST(Protocol, HeaderLayoutIsLittleEndian) {
  std::string f = encodeFrame(FrameType::kStdout, 0x01020304, "ab");
  ASSERT_EQ(f.size(), kHeaderSize + 2);
  EXPECT_EQ(f[0], kVersion);
  EXPECT_EQ(f[1], static_cast<char>(FrameType::kStdout));
  EXPECT_EQ(f[2], 0);
  EXPECT_EQ(f[3], 0);
  EXPECT_EQ(std::string(f.substr(4, 4)), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(std::string(f.substr(8, 4)), std::string("\x02\x00\x00\x00", 4));
}

TEST(Protocol, EveryFrameTypeRoundTripsWhateverTheChunking) {
  std::string stream;
  for (uint8_t t = 1; t <= static_cast<uint8_t>(FrameType::kExport); ++t)
    stream += encodeFrame(static_cast<FrameType>(t), t * 7, std::string(t * 3, static_cast<char>('a' + t)));
  for (size_t chunk : {1ul, 5ul, 12ul, 13ul, 4096ul}) {
    auto frames = decodeAll(stream, chunk);
    ASSERT_EQ(frames.size(), static_cast<size_t>(FrameType::kExport)) << "chunk " << chunk;
    for (size_t i = 0; i < frames.size(); ++i) {
      uint8_t t = static_cast<uint8_t>(i + 1);
      EXPECT_EQ(static_cast<uint8_t>(frames[i].type), t);
      EXPECT_EQ(frames[i].channel, t * 7u);
      EXPECT_EQ(frames[i].payload, std::string(t * 3, static_cast<char>('a' + t)));
    }
  }
}

TEST(Protocol, HeaderAndPayloadInOneReadAreBothDelivered) {
  // Regression: a reader that stopped after the header left the payload unread.
  auto frames = decodeAll(encodeFrame(FrameType::kHello, 0, encodeHello("airlock-init")), 65536);
  ASSERT_EQ(frames.size(), 1u);
  auto hello = decodeHello(frames[0].payload);
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->first, kVersion);
  EXPECT_EQ(hello->second, "airlock-init");
}

TEST(Protocol, EmptyPayloadFramesDecode) {
  auto frames = decodeAll(encodeFrame(FrameType::kStdin, 3, "") + encodeFrame(FrameType::kShutdown, 0, ""), 64);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_TRUE(frames[0].payload.empty());
  EXPECT_EQ(frames[1].type, FrameType::kShutdown);
}

TEST(Protocol, OversizedFrameIsRejectedBeforeBuffering) {
  std::string header = encodeFrame(FrameType::kStdout, 1, "");
  uint32_t huge = kMaxPayload + 1;
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>((huge >> (8 * i)) & 0xff);
  FrameDecoder decoder;
  EXPECT_EQ(decoder.feed(header), kHeaderSize);
  auto r = decoder.next();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("exceeds"), std::string::npos);
  EXPECT_EQ(decoder.feed("more"), 0u) << "a poisoned decoder must not buffer";
  EXPECT_FALSE(decoder.next());
}

TEST(Protocol, UnknownTypeIsRejected) {
  std::string f = encodeFrame(FrameType::kStdout, 1, "x");
  f[1] = 99;
  std::string error;
  auto frames = decodeAll(f, 64, &error);
  EXPECT_TRUE(frames.empty());
  EXPECT_NE(error.find("unknown frame type 99"), std::string::npos);
}

TEST(Protocol, WrongVersionAndFlagsAreRejected) {
  std::string f = encodeFrame(FrameType::kStdout, 1, "x");
  f[0] = 2;
  std::string error;
  decodeAll(f, 64, &error);
  EXPECT_NE(error.find("version 2"), std::string::npos);
  f = encodeFrame(FrameType::kStdout, 1, "x");
  f[2] = 1;
  error.clear();
  decodeAll(f, 64, &error);
  EXPECT_NE(error.find("flags"), std::string::npos);
}

TEST(Protocol, TruncatedFrameStaysPending) {
  std::string f = encodeFrame(FrameType::kStdout, 1, "hello");
  FrameDecoder decoder;
  std::vector<Frame> frames;
  ASSERT_TRUE(decoder.consume(std::string_view(f).substr(0, f.size() - 1), [&](Frame&& fr) { frames.push_back(fr); }));
  EXPECT_TRUE(frames.empty());
  EXPECT_EQ(decoder.pending(), f.size() - 1);
}

TEST(Protocol, ExecRequestRoundTrips) {
  ExecRequest r;
  r.argv = {"sh", "-c", "echo 'a b'"};
  r.env = {"A=x y \"q\" =z\nline2", "PATH=/bin"};
  r.cwd = "/workspace";
  r.uid = 1000;
  r.gid = 1000;
  r.pty = true;
  r.rows = 33;
  r.cols = 101;
  auto d = decodeExec(encodeExec(r));
  ASSERT_TRUE(d) << d.error();
  EXPECT_EQ(d->argv, r.argv);
  EXPECT_EQ(d->env, r.env);
  EXPECT_EQ(d->cwd, r.cwd);
  EXPECT_EQ(d->uid, 1000u);
  EXPECT_TRUE(d->pty);
  EXPECT_EQ(d->rows, 33);
  EXPECT_EQ(d->cols, 101);
}

TEST(Protocol, MalformedExecRequestsAreRejected) {
  ExecRequest good;
  good.argv = {"true"};
  std::string payload = encodeExec(good);
  EXPECT_FALSE(decodeExec(payload.substr(0, payload.size() - 1)));
  EXPECT_FALSE(decodeExec(payload + "x"));
  ExecRequest empty = good;
  empty.argv.clear();
  EXPECT_FALSE(decodeExec(encodeExec(empty)));
  ExecRequest relative = good;
  relative.cwd = "tmp";
  EXPECT_FALSE(decodeExec(encodeExec(relative)));
  ExecRequest nul = good;
  nul.argv.push_back(std::string("a\0b", 3));
  EXPECT_FALSE(decodeExec(encodeExec(nul)));
  ExecRequest badEnv = good;
  badEnv.env = {"NOEQUALS"};
  EXPECT_FALSE(decodeExec(encodeExec(badEnv)));
  // A list count far larger than the payload must fail without allocating it.
  std::string huge = payload;
  size_t argcAt = 4 + 4 + 1 + 2 + 2 + 4 + 1;
  for (int i = 0; i < 4; ++i) huge[argcAt + i] = '\xff';
  EXPECT_FALSE(decodeExec(huge));
}

TEST(Protocol, ExitStatusRoundTripsAndIsValidated) {
  for (ExitStatus s : {ExitStatus{false, 0}, ExitStatus{false, 42}, ExitStatus{true, 9}}) {
    auto d = decodeExit(encodeExit(s));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->shellCode(), s.shellCode());
  }
  EXPECT_EQ((ExitStatus{true, 9}).shellCode(), 137);
  EXPECT_FALSE(decodeExit(encodeExit({false, 256})));
  EXPECT_FALSE(decodeExit(encodeExit({true, 0})));
  EXPECT_FALSE(decodeExit(encodeExit({true, 65})));
  EXPECT_FALSE(decodeExit("\x02\0\0\0\0"));
  EXPECT_FALSE(decodeExit("\0\0\0"));
}

TEST(Protocol, SmallPayloadsAreLengthChecked) {
  auto r = decodeResize(encodeResize(40, 120));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 40);
  EXPECT_EQ(r->second, 120);
  EXPECT_FALSE(decodeResize("abc"));
  EXPECT_EQ(*decodeU32(encodeU32(15)), 15u);
  EXPECT_FALSE(decodeU32("12345"));
  EXPECT_FALSE(decodeHello("\x01\0\0\0\x05\0\0\0ab"));
}

}  // namespace
}  // namespace airlock::protocol
