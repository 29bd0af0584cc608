#include "common/subordinate_ids.h"

#include <gtest/gtest.h>

namespace airlock {
namespace {

TEST(SubordinateRange, MatchesByNameOrUidWithEnoughIds) {
  const std::string file = "bob:100000:65536\nalice:165536:65536\n1001:231072:65536\nshort:300000:1000\n";
  auto alice = findSubordinateRange(file, "alice", 1000, 65536);
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->first, 165536u);
  EXPECT_EQ(alice->count, 65536u);
  auto byUid = findSubordinateRange(file, "", 1001, 65536);
  ASSERT_TRUE(byUid);
  EXPECT_EQ(byUid->first, 231072u);
  EXPECT_FALSE(findSubordinateRange(file, "short", 1002, 65536)) << "1000 ids are too few";
  EXPECT_TRUE(findSubordinateRange(file, "short", 1002, 1)) << "but enough for one gid";
  EXPECT_FALSE(findSubordinateRange(file, "carol", 1003, 1));
  EXPECT_FALSE(findSubordinateRange("", "alice", 1000, 1));
}

TEST(SubordinateRange, MalformedLinesMatchNothing) {
  for (const char* file : {"alice\nalice:1\n", "alice:x:65536\n", "alice:100000:\n", "alice:-1:65536\n",
                           "alice:100000:65536junk\n", "alice:100000:0\n", "alice:1e5:65536\n"})
    EXPECT_FALSE(findSubordinateRange(file, "alice", 1000, 0)) << file;
  EXPECT_TRUE(findSubordinateRange("alice:x:1\nalice:5:1", "alice", 1000, 1)) << "a later good line still counts";
}

TEST(SubordinateRange, RangesPastTheLastIdMatchNothing) {
  EXPECT_TRUE(findSubordinateRange("alice:4294901759:65536\n", "alice", 1000, 1)) << "ends at 2^32 - 2";
  EXPECT_FALSE(findSubordinateRange("alice:4294901760:65536\n", "alice", 1000, 1)) << "reaches 2^32 - 1";
  EXPECT_FALSE(findSubordinateRange("alice:4294967296:1\n", "alice", 1000, 1));
  EXPECT_FALSE(findSubordinateRange("alice:100000:18446744073709551615\n", "alice", 1000, 1));
}

// The fix doctor prints must not hand out another user's ids.
TEST(SubordinateRange, TheFirstFreeIdFollowsEveryRangeGivenOut) {
  const std::string none;
  EXPECT_EQ(firstFreeSubordinateId({&none, &none}), 100000u);
  const std::string subuid = "bob:100000:65536\ncarol:300000:65536\n", subgid = "dave:500000:1000\nbad:x:1\n";
  EXPECT_EQ(firstFreeSubordinateId({&subuid, &subgid}), 501000u);
  EXPECT_EQ(firstFreeSubordinateId({&subuid}), 365536u);
}

TEST(SubordinateRange, AnEmptyNameNeverMatchesAnEmptyField) {
  EXPECT_FALSE(findSubordinateRange(":100000:65536\n", "", 1000, 1));
}

}  // namespace
}  // namespace airlock
