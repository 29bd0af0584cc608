// What building the base image as a user needs (mmdebstrap --mode=unshare):
// checked before mmdebstrap runs, so the user gets the fix, not a late error.
#include "image/base_rootfs.h"

#include <gtest/gtest.h>

namespace airlock::image {
namespace {

TEST(UnprivilegedBuild, ReadyHostHasNoProblems) {
  EXPECT_TRUE(unprivilegedBuildProblems("alice", 1000, true, true, "alice:100000:65536\n", "1000:100000:65536\n")
                  .empty());
}

TEST(UnprivilegedBuild, EachMissingPieceIsOneLineWithItsFix) {
  auto problems = unprivilegedBuildProblems("alice", 1000, false, true, "", "bob:100000:65536\n");
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].find("sudo apt-get install uidmap"), std::string::npos) << problems[0];
  // Not bob's range: the first ids after every range given out.
  EXPECT_NE(problems[1].find("sudo usermod --add-subuids 165536-231071 alice"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("sudo usermod --add-subgids 165536-231071 alice"), std::string::npos) << problems[2];
  for (const auto& p : problems) EXPECT_EQ(p.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace airlock::image
