// airlock: run AI coding agents inside microVMs, review their changes before
// they reach your files. This is the CLI boundary: the only place exceptions
// are caught and turned into exit codes.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agents/registry.h"
#include "cli/agents.h"
#include "cli/commands.h"
#include "cli/host_secrets.h"
#include "common/exit_codes.h"
#include "common/host_context.h"
#include "common/token_prefixes.h"
#include "common/visible_text.h"

extern char** environ;

int main(int argc, char** argv) {
  // A peer that hung up (the guest's end of a proxied connection, a closed
  // pipe) must be an EPIPE error where it happens, not the end of airlock:
  // the session still has a VM to stop and changes to review. Programs
  // airlock starts get the default back (common/subprocess.cc).
  signal(SIGPIPE, SIG_IGN);
  // The only read of the environment and the host's facts: everything below
  // takes them from here.
  const airlock::HostContext host = airlock::readHostContext(environ);
  if (std::string bad = airlock::cli::secretStoreChoiceError(host); !bad.empty()) {
    std::fprintf(stderr, "airlock: %s\n", bad.c_str());
    return airlock::exit_code::kUsage;
  }
  CLI::App app{"airlock: run AI coding agents in microVMs; nothing reaches your files until you review it."};
  app.name("airlock");
  app.require_subcommand(1);
  app.set_version_flag("--version", "airlock 0.1.0");
  int exitCode = 0;
  // Everything after the first `--` is a guest command, passed on untouched
  // (CLI11 would otherwise hand it to the root app as unexpected extras).
  std::vector<std::string> afterDoubleDash;
  bool doubleDash = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    afterDoubleDash.assign(argv + i + 1, argv + argc);
    argc = i;
    doubleDash = true;
    break;
  }
  // The command line as parsed (`airlock AGENT` spelled `airlock run AGENT`),
  // for a detached session's supervisor to run again; filled below, before
  // the parse (the verbs keep a reference).
  std::vector<std::string> invocation;
  airlock::cli::addAllCommands(app, exitCode, host, afterDoubleDash, invocation);
  auto subcommands = app.get_subcommands({});
  auto isVerb = [&](const char* word) {
    return std::any_of(subcommands.begin(), subcommands.end(), [&](const CLI::App* sub) { return sub->check_name(word); });
  };
  // `airlock AGENT ...` is `airlock run AGENT ...`; a verb of the same name
  // wins (`airlock shell NAME`; the shell agent is `airlock run shell`).
  std::vector<char*> args(argv, argv + argc);
  if (argc > 1 && !isVerb(argv[1])) {
    if (auto registry = airlock::cli::knownAgents(host); registry && registry->find(argv[1]))
      args.insert(args.begin() + 1, const_cast<char*>("run"));
  }
  invocation.assign(args.begin(), args.end());
  if (doubleDash) {
    invocation.push_back("--");
    invocation.insert(invocation.end(), afterDoubleDash.begin(), afterDoubleDash.end());
  }
  // A first word that is neither a verb nor an agent: say so, with both lists.
  const bool known = args.size() > 1 && isVerb(args[1]);
  // A word that starts as a token does is never repeated: it may be one,
  // typed where a name or a flag's value goes.
  auto mayBeToken = [](std::string_view word) {
    size_t eq = word.find('=');
    return airlock::startsLikeToken(word) ||
           (eq != std::string_view::npos && airlock::startsLikeToken(word.substr(eq + 1)));
  };
  const bool tokenOnLine = std::any_of(args.begin() + 1, args.end(), [&](const char* w) { return mayBeToken(w); });
  if (args.size() > 1 && args[1][0] != '-' && !known) {
    std::string verbs, agentNames;
    for (const auto* sub : subcommands)
      if (!sub->get_group().empty()) verbs += (verbs.empty() ? "" : ", ") + sub->get_name();
    if (auto registry = airlock::cli::knownAgents(host))
      for (const auto& name : registry->names()) agentNames += (agentNames.empty() ? "" : ", ") + name;
    const std::string word =
        mayBeToken(args[1]) ? "(not repeated: it starts as a token does)" : "'" + airlock::visibleText(args[1]) + "'";
    std::fprintf(stderr, "airlock: unknown command or agent %s\n  commands: %s\n  agents: %s\nRun airlock --help.\n",
                 word.c_str(), verbs.c_str(), agentNames.c_str());
    return airlock::exit_code::kUsage;
  }
  // `airlock config show`: a verb of sub-verbs followed by a word that is
  // none of them (CLI11 would say "a subcommand is required", or show the
  // verb's help for --help).
  if (known && args.size() > 2 && args[2][0] != '-' && !tokenOnLine) {
    CLI::App* verb = app.get_subcommand(args[1]);
    auto subs = verb->get_subcommands({});
    const bool positionals = !verb->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
    if (!subs.empty() && !positionals &&
        std::none_of(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->check_name(args[2]); })) {
      std::string names;
      for (const auto* s : subs) names += (names.empty() ? "" : ", ") + s->get_name();
      std::fprintf(stderr, "airlock %s: unknown command '%s'; its commands: %s (see airlock %s --help)\n", args[1],
                   airlock::visibleText(args[2]).c_str(), names.c_str(), args[1]);
      return airlock::exit_code::kUsage;
    }
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, like every other airlock error, naming the help to read.
    std::string verb = known ? std::string(" ") + args[1] : "";
    const std::string what = tokenOnLine ? "these arguments are not what it takes (not repeated: one starts as a token "
                                           "does; a token goes on standard input)"
                                         : airlock::visibleText(e.what());
    std::fprintf(stderr, "airlock%s: %s (see airlock%s --help)\n", verb.c_str(), what.c_str(), verb.c_str());
    return airlock::exit_code::kUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "airlock: %s\n", e.what());
    return airlock::exit_code::kInternal;
  }
  return exitCode;
}
