#include "image/recipe.h"

#include <fmt/format.h>

#include "common/sha256.h"
#include "image/base_rootfs.h"
#include "image/pypi_packages.h"

namespace airlock::image {
namespace {

/// Bump when the layout of agent images changes (user, paths, wrapper, mkfs options).
constexpr std::string_view kImageFormat = "airlock-agent-image-1";

}  // namespace

std::string recipeDigest(const agents::AgentSpec& spec) {
  const auto& r = spec.image;
  Sha256 h;
  auto field = [&h](std::string_view name, std::string_view value) {
    h.update(fmt::format("{}={}:{}\n", name, value.size(), value));
  };
  field("format", kImageFormat);
  field("base", baseDigest(baseExtraPackages(r)));
  field("name", spec.name);
  field("npm_package", r.npmPackage);
  field("version", r.version);
  field("native_package", r.nativePackage);
  field("native_version", r.nativeVersion);
  field("binary", r.binary);
  field("install_as", r.installAs);
  field("node", r.node ? "true" : "false");
  if (!r.archive.empty()) field("archive", r.archive);
  if (!r.pypiPackage.empty()) field("pypi_package", r.pypiPackage);  // only then: other images keep their digests
  if (r.node) field("node_runtime", fmt::format("{}@{}", kNodeRuntimePackage, kNodeRuntimeVersion));
  // Only when there are any: an image without MCP servers keeps its digest.
  for (const auto& [name, pin] : r.mcpPackages) field("mcp:" + name, pin);
  if (!r.mcpPackages.empty()) field("mcp_node_runtime", fmt::format("{}@{}", kNodeRuntimePackage, kNodeRuntimeVersion));
  return h.hex();
}

const std::vector<std::string>& baseExtraPackages(const agents::ImageRecipe& recipe) {
  static const std::vector<std::string> none;
  return recipe.pypiPackage.empty() ? none : pypiBasePackages();
}

std::string imagesDir(const std::string& cacheDir) { return cacheDir + "/images"; }

std::string agentImagePath(const std::string& cacheDir, const agents::AgentSpec& spec) {
  return imagesDir(cacheDir) + "/" + recipeDigest(spec) + ".erofs";
}

}  // namespace airlock::image
