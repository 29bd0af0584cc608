#include <fmt/format.h>

#include "cli/commands.h"
#include "common/exit_codes.h"

namespace airlock::cli {

std::string exitCodeFooter() {
  std::string out =
      "Exit codes:\n"
      "  0-255     the command's own exit code when airlock itself succeeded (128+N: killed by signal N;\n"
      "            130, 143, 129 also when Ctrl-C, SIGTERM or SIGHUP stopped airlock before the command started)\n"
      "            airlock's own failures (below) print an `airlock:` line on stderr first, or a review summary\n";
  for (const auto& row : exit_code::kExitCodeTable) out += fmt::format("  {:<8}  {}\n", row.code, row.meaning);
  out.pop_back();
  return out;
}

void appendExitCodeFooters(CLI::App& app) {
  std::string own = app.get_footer();
  app.footer(own.empty() ? exitCodeFooter() : own + "\n\n" + exitCodeFooter());
  for (CLI::App* sub : app.get_subcommands({})) appendExitCodeFooters(*sub);
}

}  // namespace airlock::cli
