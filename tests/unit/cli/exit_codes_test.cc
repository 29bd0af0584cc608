// The exit-code table is one table: every verb's --help footer and README.md
// list each of airlock's own codes, and the merge rule's "changes left"
// codes are the review's.

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "common/exit_codes.h"

namespace airlock::cli {
namespace {

TEST(ExitCodeTable, HelpFooterListsEveryCode) {
  std::string footer = exitCodeFooter();
  for (const auto& row : exit_code::kExitCodeTable) {
    EXPECT_NE(footer.find(fmt::format("  {:<8}  {}", row.code, row.meaning)), std::string::npos) << row.code;
  }
  EXPECT_NE(footer.find("0-255"), std::string::npos);
}

TEST(ExitCodeTable, ReadmeListsEveryCode) {
  std::ifstream in(AIRLOCK_README);
  ASSERT_TRUE(in) << AIRLOCK_README;
  std::stringstream text;
  text << in.rdbuf();
  std::string readme = text.str();
  auto section = readme.find("## Exit codes");
  ASSERT_NE(section, std::string::npos);
  for (const auto& row : exit_code::kExitCodeTable)
    EXPECT_NE(readme.find(fmt::format("\n| {} |", row.code), section), std::string::npos) << row.code;
}

TEST(ExitCodeTable, CodesAreDistinctAndInAirlocksRange) {
  int previous = 0;
  for (const auto& row : exit_code::kExitCodeTable) {
    EXPECT_GT(row.code, previous);
    EXPECT_GE(row.code, 64);
    EXPECT_LE(row.code, 79);
    previous = row.code;
  }
}

}  // namespace
}  // namespace airlock::cli
