#include "egress/dns_tcp.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace airlock::egress {
namespace {

TEST(DnsTcpTest, FramePrefixesTheBigEndianLength) {
  EXPECT_EQ(frameDnsMessage("abc"), std::string("\x00\x03" "abc", 5));
  std::string big(0x1234, 'x');
  std::string framed = frameDnsMessage(big);
  ASSERT_EQ(framed.size(), big.size() + 2);
  EXPECT_EQ(static_cast<unsigned char>(framed[0]), 0x12);
  EXPECT_EQ(static_cast<unsigned char>(framed[1]), 0x34);
  EXPECT_EQ(frameDnsMessage(std::string(kMaxDnsTcpMessage, 'x')).size(), kMaxDnsTcpMessage + 2);
  EXPECT_EQ(frameDnsMessage(std::string(kMaxDnsTcpMessage + 1, 'x')), "");
}

TEST(DnsTcpTest, ReaderWaitsForTheWholeMessage) {
  DnsTcpReader reader;
  EXPECT_FALSE(reader.next());
  reader.feed(std::string("\x00", 1));
  EXPECT_FALSE(reader.next());
  reader.feed(std::string("\x05" "he", 3));
  EXPECT_FALSE(reader.next());
  EXPECT_EQ(reader.pending(), 4u);
  reader.feed("llo");
  EXPECT_EQ(reader.next(), "hello");
  EXPECT_FALSE(reader.next());
  EXPECT_EQ(reader.pending(), 0u);
}

TEST(DnsTcpTest, PipelinedMessagesInOneReadComeOutInOrder) {
  DnsTcpReader reader;
  reader.feed(frameDnsMessage("one") + frameDnsMessage("") + frameDnsMessage("three") + std::string("\x00\x09" "par", 5));
  EXPECT_EQ(reader.next(), "one");
  EXPECT_EQ(reader.next(), "");  // a zero length prefix is an (empty) message
  EXPECT_EQ(reader.next(), "three");
  EXPECT_FALSE(reader.next());
  EXPECT_EQ(reader.pending(), 5u);
  reader.feed("tial!!");
  EXPECT_EQ(reader.next(), "partial!!");
}

TEST(DnsTcpTest, AnySplitOfAStreamGivesTheSameMessages) {
  std::vector<std::string> messages;
  std::string stream;
  for (int i = 0; i < 300; ++i) {
    messages.push_back(std::string(static_cast<size_t>(i * 37 % 700), static_cast<char>('a' + i % 26)));
    stream += frameDnsMessage(messages.back());
  }
  std::mt19937 random(42);
  for (int round = 0; round < 20; ++round) {
    DnsTcpReader reader;
    std::vector<std::string> got;
    for (size_t pos = 0; pos < stream.size();) {
      size_t n = std::min<size_t>(stream.size() - pos, random() % 9000);
      reader.feed(std::string_view(stream).substr(pos, n));
      pos += n;
      while (auto m = reader.next()) got.push_back(*m);
      // What stays buffered is never more than one partial message plus one read.
      EXPECT_LE(reader.pending(), 2 + 700 + 9000u);
    }
    EXPECT_EQ(got, messages) << "round " << round;
    EXPECT_EQ(reader.pending(), 0u);
  }
}

}  // namespace
}  // namespace airlock::egress
