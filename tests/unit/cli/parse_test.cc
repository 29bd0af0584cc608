// The verbs' command lines: repeatable options take one value per occurrence
// (the next word is IMAGE, AGENT or an error, never a second value), options
// after IMAGE are refused, and --help shows each verb's real defaults. Only
// parsing: the callbacks never run (ParseOnlyApp), nothing boots.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/run_image.h"
#include "common/exit_codes.h"

namespace airlock::cli {
namespace {

/// Thrown where CLI11 would start running the callbacks.
struct Parsed {};

/// An app whose parse stops once every option holds its value, before any
/// verb's callback runs. (Replacing the callbacks instead would free the
/// argument structs they own, which the options still write into: ASan
/// reported that use after free.)
struct ParseOnlyApp : CLI::App {
  using CLI::App::App;
  void pre_callback() override { throw Parsed{}; }
};

/// CLI11 parse of `words` (without the program name) on `app`, callbacks not run.
void parse(CLI::App& app, std::vector<std::string> words) {
  std::vector<char*> argv{const_cast<char*>("airlock")};
  for (auto& w : words) argv.push_back(w.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const Parsed&) {
  }
}

/// The root app with every verb registered; parse() never runs their callbacks.
struct Verbs {
  ParseOnlyApp app{"airlock"};
  int exitCode = 0;
  HostContext host;  ///< never read: the callbacks are cleared
  std::vector<std::string> afterDoubleDash;
  Verbs() {
    addRunCommand(app, exitCode, host, afterDoubleDash, afterDoubleDash);
    addSessionCommands(app, exitCode, host, afterDoubleDash);
    addSnapshotCommand(app, exitCode, host);
    addReviewCommand(app, exitCode, host);
    addImageCommand(app, exitCode, host);
    addInfoCommand(app, exitCode, host);
    addConfigCommand(app, exitCode, host);
  }
  CLI::App& sub(const std::string& path) {
    CLI::App* a = &app;
    size_t start = 0;
    while (start <= path.size()) {
      size_t space = path.find(' ', start);
      a = a->get_subcommand(path.substr(start, space - start));
      if (space == std::string::npos) break;
      start = space + 1;
    }
    return *a;
  }
};

/// run-image's parse of `words`, finished as its callback would.
struct RunImageParse {
  RunImageArgs args;
  Result<> finished;
};
RunImageParse parseRunImage(std::vector<std::string> words, std::vector<std::string> afterDoubleDash = {}) {
  ParseOnlyApp app{"airlock"};
  auto* cmd = app.add_subcommand("run-image");
  RunImageParse p;
  addRunImageOptions(*cmd, p.args);
  words.insert(words.begin(), "run-image");
  parse(app, words);
  p.finished = finishRunImageArgs(p.args, *cmd, afterDoubleDash);
  return p;
}

// Each repeatable option of run-image, in both --opt V and --opt=V forms,
// before IMAGE: the README's `run-image --allow-host deb.debian.org:80 debian:12`.
TEST(RunImageParse, RepeatableOptionBeforeImageTakesOneValue) {
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"-e", "A=1"}, {"--env", "A=1"}, {"--allow-host", "deb.debian.org:80"}, {"--host-port", "8080"},
      {"--publish", "8080:80"}, {"--insecure-registry", "reg.local:5000"}};
  for (const auto& [flag, value] : flags) {
    for (bool joined : {false, true}) {
      std::vector<std::string> words = joined ? std::vector<std::string>{flag + "=" + value}
                                              : std::vector<std::string>{flag, value};
      if (flag == "-e" && joined) words = {"-e" + value};  // -eA=1, the short form's own join
      words.push_back("debian:12");
      auto p = parseRunImage(words, {"apt-get", "update"});
      SCOPED_TRACE(words.front());
      ASSERT_TRUE(p.finished) << p.finished.error().message;
      EXPECT_EQ(p.args.image, "debian:12");
      EXPECT_EQ(p.args.command, (std::vector<std::string>{"apt-get", "update"}));
      const std::vector<std::string>& got = flag == "-e" || flag == "--env"   ? p.args.env
                                            : flag == "--allow-host"          ? p.args.egress.allowHosts
                                            : flag == "--host-port"           ? p.args.egress.hostPorts
                                            : flag == "--publish"             ? p.args.egress.publish
                                                                              : p.args.registry.insecureRegistries;
      EXPECT_EQ(got, std::vector<std::string>{value});
    }
  }
}

TEST(RunImageParse, RepeatedOptionKeepsEveryValue) {
  auto p = parseRunImage({"-e", "A=1", "--env=B=2", "-e", "C", "--allow-host", "a.example", "--allow-host=b.example",
                          "busybox"});
  ASSERT_TRUE(p.finished) << p.finished.error().message;
  EXPECT_EQ(p.args.env, (std::vector<std::string>{"A=1", "B=2", "C"}));
  EXPECT_EQ(p.args.egress.allowHosts, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_EQ(p.args.image, "busybox");
  EXPECT_TRUE(p.args.command.empty());
}

// With --rootfs the first word after the options is the command.
TEST(RunImageParse, RepeatableOptionBeforeRootfsCommandTakesOneValue) {
  auto p = parseRunImage({"--rootfs", "/r", "-e", "A=1", "--publish", "80", "sh", "-c", "true"});
  ASSERT_TRUE(p.finished) << p.finished.error().message;
  EXPECT_EQ(p.args.env, std::vector<std::string>{"A=1"});
  EXPECT_EQ(p.args.egress.publish, std::vector<std::string>{"80"});
  EXPECT_TRUE(p.args.image.empty());
  EXPECT_EQ(p.args.command, (std::vector<std::string>{"sh", "-c", "true"}));
}

TEST(RunImageParse, OptionAfterImageIsAUsageErrorNamingTheRule) {
  auto p = parseRunImage({"busybox", "--cpus", "2"});
  ASSERT_FALSE(p.finished);
  EXPECT_EQ(p.finished.error().code, exit_code::kUsage);
  EXPECT_NE(p.finished.error().message.find("options go before IMAGE"), std::string::npos) << p.finished.error().message;
  EXPECT_NE(p.finished.error().message.find("--"), std::string::npos);
  // A command's own options after `--` (or after the command word) are its own.
  auto ok = parseRunImage({"busybox", "ls", "-la"});
  ASSERT_TRUE(ok.finished) << ok.finished.error().message;
  EXPECT_EQ(ok.args.command, (std::vector<std::string>{"ls", "-la"}));
  auto dashed = parseRunImage({"busybox"}, {"--cpus"});
  ASSERT_TRUE(dashed.finished);
  EXPECT_EQ(dashed.args.command, std::vector<std::string>{"--cpus"});
}

TEST(RunImageParse, HelpShowsOptionsBeforeImage) {
  Verbs v;
  int code = 0;
  std::vector<std::string> dd;
  addRunImageCommand(v.app, code, v.host, dd, dd);
  std::string help = v.app.get_subcommand("run-image")->help();
  EXPECT_NE(help.find("airlock run-image [OPTIONS] IMAGE [-- CMD"), std::string::npos) << help;
  EXPECT_EQ(help.find("IMAGE [OPTIONS]"), std::string::npos);
}

// `airlock run` with options before AGENT.
TEST(RunParse, RepeatableOptionBeforeAgentTakesOneValue) {
  for (const std::string flag : {"-e", "--env", "--exclude", "--allow-host", "--host-port", "--publish",
                                 "--insecure-registry"}) {
    for (bool joined : {false, true}) {
      Verbs v;
      std::vector<std::string> words{"run"};
      if (joined) words.push_back(flag == "-e" ? "-ev1" : flag + "=v1");
      else words.insert(words.end(), {flag, "v1"});
      words.insert(words.end(), {"claude-code", "--review=auto"});
      SCOPED_TRACE(flag + (joined ? "=v1" : " v1"));
      ASSERT_NO_THROW(parse(v.app, words));
      auto& run = v.sub("run");
      EXPECT_EQ(run.get_option(flag)->as<std::vector<std::string>>(), std::vector<std::string>{"v1"});
      EXPECT_EQ(run.get_option("agent")->as<std::string>(), "claude-code");
    }
  }
}

// A second word after --exclude is never a second pattern: snapshot has no
// positional (an error), review's positional is the session's NAME.
TEST(ReviewParse, ExcludeTakesOneValuePerOccurrence) {
  for (const std::string verb : {"review", "snapshot"}) {
    Verbs v;
    ASSERT_NO_THROW(parse(v.app, {verb, "--exclude", "a", "--exclude=b", "-s", "S"}));
    EXPECT_EQ(v.sub(verb).get_option("--exclude")->as<std::vector<std::string>>(),
              (std::vector<std::string>{"a", "b"}));
  }
  Verbs stray;
  EXPECT_THROW(parse(stray.app, {"snapshot", "--exclude", "a", "b", "-s", "S"}), CLI::ParseError);
  Verbs named;
  ASSERT_NO_THROW(parse(named.app, {"review", "--exclude", "a", "fix-tests"}));
  EXPECT_EQ(named.sub("review").get_option("--exclude")->as<std::vector<std::string>>(), std::vector<std::string>{"a"});
  EXPECT_EQ(named.sub("review").get_option("name")->as<std::string>(), "fix-tests");
}

TEST(ImagePullParse, InsecureRegistryBeforeImageTakesOneValue) {
  for (bool joined : {false, true}) {
    Verbs v;
    std::vector<std::string> words{"image", "pull"};
    if (joined) words.push_back("--insecure-registry=reg.local:5000");
    else words.insert(words.end(), {"--insecure-registry", "reg.local:5000"});
    words.push_back("reg.local:5000/team/tool:1");
    ASSERT_NO_THROW(parse(v.app, words));
    auto& pull = v.sub("image pull");
    EXPECT_EQ(pull.get_option("--insecure-registry")->as<std::vector<std::string>>(),
              std::vector<std::string>{"reg.local:5000"});
    EXPECT_EQ(pull.get_option("IMAGE")->as<std::string>(), "reg.local:5000/team/tool:1");
  }
}

// Item 14: each verb's help shows its real --pull default.
TEST(RegistryFlagsHelp, ShowsEachVerbsRealPullDefault) {
  Verbs v;
  int code = 0;
  std::vector<std::string> dd;
  addRunImageCommand(v.app, code, v.host, dd, dd);
  EXPECT_EQ(v.sub("image pull").get_option("--pull")->get_default_str(), "always");
  EXPECT_EQ(v.sub("run-image").get_option("--pull")->get_default_str(), "missing");
  EXPECT_EQ(v.sub("run").get_option("--pull")->get_default_str(), "missing");
  std::string help = v.sub("image pull").help();
  EXPECT_NE(help.find("always"), std::string::npos);
  EXPECT_EQ(help.find("=missing"), std::string::npos) << help;
}

}  // namespace
}  // namespace airlock::cli
