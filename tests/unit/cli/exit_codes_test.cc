// The exit-code table is one table: every verb's --help footer and README.md
// list each of airlock's own codes, and the merge rule's "changes left"
// codes are the review's.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// README says the table ends every verb's --help: each verb and sub-verb,
// after its own footer, which it keeps.
TEST(ExitCodeTable, EveryVerbsHelpEndsWithIt) {
  CLI::App app{"airlock"};
  int exitCode = 0;
  HostContext host;
  std::vector<std::string> none;
  addAllCommands(app, exitCode, host, none, none);
  std::vector<CLI::App*> verbs{&app};
  size_t checked = 0;
  while (!verbs.empty()) {
    CLI::App* verb = verbs.back();
    verbs.pop_back();
    std::string footer = verb->get_footer();
    ASSERT_GE(footer.size(), exitCodeFooter().size()) << verb->get_name();
    EXPECT_EQ(footer.substr(footer.size() - exitCodeFooter().size()), exitCodeFooter()) << verb->get_name();
    EXPECT_EQ(footer.find("Exit codes:"), footer.rfind("Exit codes:")) << verb->get_name() << " lists it twice";
    ++checked;
    for (CLI::App* sub : verb->get_subcommands({})) verbs.push_back(sub);
  }
  EXPECT_GT(checked, 30u);
  EXPECT_NE(app.get_subcommand("stop")->get_footer().find("The agent gets SIGTERM"), std::string::npos)
      << "a verb's own footer was replaced";
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
