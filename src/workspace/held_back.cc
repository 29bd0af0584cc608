#include "workspace/held_back.h"

#include <string>
#include <vector>

#include "common/encoding.h"
#include "workspace/ignore.h"

namespace airlock::workspace {
namespace {

// The list documented in held_back.h, lowercase, gitignore syntax: a name
// without '/' matches at any depth, "**/" prefixes do the same for paths.
constexpr std::string_view kHeldBack =
    ".git\n.gitmodules\n.gitattributes\n.husky\n.pre-commit-config.yaml\nlefthook*.yml\nlefthook*.yaml\n"
    ".lefthook*.yml\n.lefthook*.yaml\n.lefthook\n"
    "**/.github/workflows\n**/.github/actions\n**/.github/hooks\n**/.github/copilot\n**/.github/mcp.json\n"
    "**/.github/lsp.json\n**/.github/extensions\n.gitlab-ci.yml\n.gitlab\n.circleci\n.travis.yml\n.buildkite\n"
    "azure-pipelines.yml\nbitbucket-pipelines.yml\n.drone.yml\n"
    ".devcontainer\n.devcontainer.json\n.vscode\n.idea\n.zed\n.nvim.lua\n.exrc\n.vimrc\n.dir-locals.el\n"
    ".envrc\n.tool-versions\n.mise.toml\nmise.toml\n.mise\n.mise.*.toml\nmise.*.toml\n"
    "**/.cargo/config\n**/.cargo/config.toml\nrust-toolchain\nrust-toolchain.toml\n.yarnrc\n.yarnrc.yml\n"
    ".pnpmfile.cjs\n.npmrc\n**/.bundle/config\n.mvn\n**/gradle/wrapper\n"
    ".mcp.json\n.claude\n.gemini\n.codex\n.cursor\n.opencode\nopencode.json\nopencode.jsonc\n.continue\n"
    ".airlock.yaml\n.airlock.yml\n.airlockignore\n"
    "**/.yarn/releases\n**/.yarn/plugins\n.pnp.cjs\n.pnp.loader.mjs\n.venv\n**/node_modules/.bin\n"
    "flake.nix\nshell.nix\ndevenv.nix\ndevbox.json\n**/.config/mise.toml\n**/.config/mise\n**/mise/config.toml\n"
    ".rtx.toml\n.helix\n.nvimrc\n.dir-locals-2.el\n.aider.conf.yml\n.qwen\n.grok\n.pi\n.agents\n.kiro\n.roo\n"
    "crush.json\n.crush.json\n"
    ".lfsconfig\ngradlew\nmvnw\neslint.config.*\n.eslintrc.js\n.eslintrc.cjs\n.eslintrc.mjs\nprettier.config.*\n"
    ".prettierrc.js\n.prettierrc.cjs\n.prettierrc.mjs\n.lintstagedrc.js\n.lintstagedrc.cjs\n.lintstagedrc.mjs\n"
    "lint-staged.config.*\n.direnv\n.devbox\n.bazelrc\n.amazonq\n.windsurf\n.claude.json\n.opencode.json\n";

const IgnoreRules& rules() {
  static const IgnoreRules r = [] {
    IgnoreRules x;
    x.addLines(kHeldBack);
    return x;
  }();
  return r;
}

/// The multi-component patterns, split into components (for couldHoldBackBelow).
const std::vector<std::vector<std::string>>& anchoredPatterns() {
  static const std::vector<std::vector<std::string>> v = [] {
    std::vector<std::vector<std::string>> out;
    std::string_view all = kHeldBack;
    for (size_t pos = 0; pos < all.size();) {
      size_t nl = all.find('\n', pos);
      std::string_view line = all.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.find('/') == std::string_view::npos) continue;
      std::vector<std::string> parts;
      for (size_t s = 0; s <= line.size();) {
        size_t e = line.find('/', s);
        if (e == std::string_view::npos) e = line.size();
        parts.emplace_back(line.substr(s, e - s));
        s = e + 1;
      }
      out.push_back(std::move(parts));
    }
    return out;
  }();
  return v;
}

std::vector<std::string_view> components(std::string_view rel) {
  std::vector<std::string_view> out;
  for (size_t s = 0; s < rel.size();) {
    size_t e = rel.find('/', s);
    if (e == std::string_view::npos) e = rel.size();
    out.push_back(rel.substr(s, e - s));
    s = e + 1;
  }
  return out;
}

}  // namespace

bool isHeldBackPath(std::string_view rel) { return rules().match(asciiLower(rel), false) != IgnoreVerdict::Included; }

bool couldHoldBackBelow(std::string_view rel) {
  if (isHeldBackPath(rel)) return true;
  std::string low = asciiLower(rel);
  auto comps = components(low);
  for (const auto& pat : anchoredPatterns()) {
    bool anyDepth = !pat.empty() && pat.front() == "**";
    size_t first = anyDepth ? 1 : 0;
    size_t n = pat.size() - first;
    // rel's last k components (all of them when anchored) match the pattern's first k < n.
    for (size_t k = 1; k < n && k <= comps.size(); ++k) {
      if (!anyDepth && k != comps.size()) continue;
      bool ok = true;
      for (size_t j = 0; j < k && ok; ++j) ok = globMatch(pat[first + j], comps[comps.size() - k + j]);
      if (ok) return true;
    }
  }
  return false;
}

bool isGitMetadataPath(std::string_view rel) {
  for (std::string_view c : components(rel))
    if (c.size() == 4 && asciiLower(c) == ".git") return true;
  return false;
}

}  // namespace airlock::workspace
