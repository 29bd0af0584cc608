#include "common/sha256.h"
#include "support/scratch.h"

#include <gtest/gtest.h>

namespace airlock {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FileRefusesSymlink) {
  TempDir dir = airlock::test::scratchDir("airlock-sha-");
  std::string link = dir.path() + "/link";
  ASSERT_EQ(symlink("/etc/hostname", link.c_str()), 0);
  EXPECT_FALSE(sha256File(link));
}

}  // namespace
}  // namespace airlock
