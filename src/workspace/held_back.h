#pragma once
// The held-back list: every workspace path that a later tool on the host
// reads as configuration or runs, so that accepting an agent's version of it
// lets the agent run code as the user. `--review=auto` never flushes these,
// and interactive review flags them. Matched on the lowercased path (it only
// makes the review stricter), at any depth unless anchored below:
//   git:        .git (a directory or gitfile, and everything below it; never
//               flushed at all, see isGitMetadataPath), .gitmodules,
//               .gitattributes, .husky, .pre-commit-config.yaml, lefthook*.yml
//   CI:         .github/workflows, .github/actions, .gitlab-ci.yml, .gitlab,
//               .circleci, .travis.yml, .buildkite, azure-pipelines.yml,
//               bitbucket-pipelines.yml, .drone.yml
//   editors:    .devcontainer(.json), .vscode/, .idea/, .zed/, .nvim.lua,
//               .exrc, .vimrc, .nvimrc, .dir-locals(-2).el, .helix/, and JS
//               configs editors run on open/save: eslint.config.*,
//               .eslintrc.{js,cjs,mjs}, prettier.config.*, .prettierrc.{js,cjs,mjs}
//   shells:     .envrc (direnv), .tool-versions, .mise.toml, mise.toml, .mise/,
//               .config/mise(.toml), mise/config.toml, .rtx.toml, flake.nix,
//               shell.nix, devenv.nix, devbox.json, .venv/
//   packages:   .cargo/config(.toml), rust-toolchain(.toml), .yarnrc(.yml),
//               .yarn/releases, .yarn/plugins, .pnp.cjs, .pnp.loader.mjs,
//               .pnpmfile.cjs, .npmrc, node_modules/.bin, .bundle/config, .mvn/,
//               gradle/wrapper/, gradlew, mvnw, .lfsconfig
//   agents:     .mcp.json, .claude/, .gemini/, .codex/, .cursor/, .opencode/,
//               opencode.json(c), .continue/, .aider.conf.yml, .qwen/, .grok/, .pi/, .agents/, .kiro/,
//               .roo/, (.)crush.json, .amazonq/, .windsurf/, .claude.json,
//               .opencode.json, and Copilot's .github/hooks/ (hook commands),
//               .github/copilot/ (settings), .github/mcp.json, .github/lsp.json
//               (language servers it starts) and .github/extensions/ (Node code)
//   more:       .lintstagedrc.{js,cjs,mjs}, lint-staged.config.* (run on commit),
//               .direnv/, .devbox/ (activation scripts), .bazelrc
//   airlock:    .airlock.yaml, .airlock.yml, .airlockignore
// Secrets are excluded separately (ignore.h) and never flushed.

#include <string_view>

namespace airlock::workspace {

/// True when `rel` (a normalized relative path) or one of its ancestors is on
/// the held-back list above (or is a built-in secret/config name).
bool isHeldBackPath(std::string_view rel);

/// True when some held-back pattern could match a path strictly below `rel`
/// (".github" for .github/workflows, ".cargo" for .cargo/config.toml) or
/// `rel` itself is held back: a symlink there would aim those names elsewhere.
bool couldHoldBackBelow(std::string_view rel);

/// True when any component of `rel` is ".git" (case folded): git metadata,
/// never written or deleted by a flush in any review mode.
bool isGitMetadataPath(std::string_view rel);

}  // namespace airlock::workspace
