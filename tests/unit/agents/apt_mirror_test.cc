#include "image/apt_mirror.h"

#include <gtest/gtest.h>

namespace airlock::image {
namespace {

TEST(AptMirror, ParsesOneLineSources) {
  auto s = parseSourcesList(R"(# comment
deb http://mirror.example/debian/ bookworm main contrib
deb-src http://mirror.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] https://packages.cloud.google.com/apt cloud-sdk-bookworm main
  deb http://security.example/debian-security bookworm-security main # trailing
deb
)");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].uri, "http://mirror.example/debian");
  EXPECT_EQ(s[0].suite, "bookworm");
  EXPECT_EQ(s[1].uri, "https://packages.cloud.google.com/apt");
  EXPECT_EQ(s[1].suite, "cloud-sdk-bookworm");
  EXPECT_EQ(s[2].suite, "bookworm-security");
}

TEST(AptMirror, ParsesDeb822Sources) {
  auto s = parseDeb822Sources(R"(Types: deb deb-src
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm

Types: deb
URIs: http://off.example/debian
Suites: bookworm
Enabled: no

Types: deb
URIs: http://deb.example/debian-security
Suites: bookworm-security
)");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].uri, "http://deb.example/debian");
  EXPECT_EQ(s[1].suite, "bookworm-updates");
  EXPECT_EQ(s[2].suite, "bookworm-security");
}

TEST(AptMirror, SourceLinesUseHostMirrors) {
  auto lines = debianSourceLines({{"https://packages.cloud.google.com/apt", "cloud-sdk-bookworm"},
                                  {"http://m.example/debian", "bookworm"},
                                  {"http://s.example/debian-security", "bookworm-security"}},
                                 "bookworm");
  EXPECT_EQ(lines, (std::vector<std::string>{"deb http://m.example/debian bookworm main",
                                             "deb http://m.example/debian bookworm-updates main",
                                             "deb http://s.example/debian-security bookworm-security main"}));
}

TEST(AptMirror, SourceLinesDefaultToDebianOrg) {
  auto lines = debianSourceLines({{"http://archive.ubuntu.com/ubuntu", "jammy"}}, "bookworm");
  EXPECT_EQ(lines, (std::vector<std::string>{"deb http://deb.debian.org/debian bookworm main",
                                             "deb http://deb.debian.org/debian bookworm-updates main",
                                             "deb http://deb.debian.org/debian-security bookworm-security main"}));
}

}  // namespace
}  // namespace airlock::image
