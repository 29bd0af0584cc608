#include "common/encoding.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace airlock {
namespace {

TEST(Hex, LowercaseTwoDigitsPerByte) {
  EXPECT_EQ(hexEncode(""), "");
  EXPECT_EQ(hexEncode(std::string("\x00\x0f\xa5\xff", 4)), "000fa5ff");
}

TEST(Base64, RoundTripsEveryLengthModThree) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3),
                                                       std::string("\0\0", 2)}) {
    auto back = base64Decode(base64Encode(s));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, s);  // trailing NUL bytes are data, not padding
  }
  EXPECT_EQ(base64Encode("hello"), "aGVsbG8=");
}

TEST(Base64, WhitespaceIgnoredPaddingOptional) {
  EXPECT_EQ(*base64Decode("aGVs\nbG8="), "hello");
  EXPECT_EQ(*base64Decode("aGVsbG8"), "hello");
  EXPECT_EQ(*base64Decode(" aGVsbA== \r\n"), "hell");
}

TEST(Base64, RefusesWhatIsNotStrictBase64) {
  EXPECT_FALSE(base64Decode("aGVs*G8="));   // outside the alphabet
  EXPECT_FALSE(base64Decode("aG=Vs"));      // data after padding
  EXPECT_FALSE(base64Decode("aGVsbA==="));  // three '='
  EXPECT_FALSE(base64Decode("aGVsb"));      // a dangling 6-bit group
  EXPECT_FALSE(base64Decode("aGVs-G8_"));   // the URL alphabet is not this one
}

TEST(FormatBytes, BinaryUnitsOneDecimal) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(3u << 20), "3.0 MiB");
  EXPECT_EQ(formatBytes((uint64_t{5} << 30) + (uint64_t{1} << 29)), "5.5 GiB");
  EXPECT_EQ(formatBytes(uint64_t{2} << 40), "2.0 TiB");
}

TEST(FormatUtcTime, IsRfc3339InUtc) {
  EXPECT_EQ(formatUtcTime(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(formatUtcTime(1796389200), "2026-12-04T13:00:00Z");
}

// Only A-Z changes: a locale's tolower would fold bytes of UTF-8 names (and
// the dotless i of tr_TR) that git and DNS compare as they are.
TEST(AsciiLower, FoldsOnlyAsciiLetters) {
  EXPECT_EQ(asciiLower("Content-Type: TEXT/Event-Stream"), "content-type: text/event-stream");
  EXPECT_EQ(asciiLower(".GIT"), ".git");
  EXPECT_EQ(asciiLower("\xc3\x89T\xc3\xa9"), "\xc3\x89t\xc3\xa9");
  EXPECT_EQ(asciiLower(std::string_view("A\0B", 3)), std::string("a\0b", 3));
  EXPECT_EQ(asciiLower("@[`{"), "@[`{");
}

}  // namespace
}  // namespace airlock
