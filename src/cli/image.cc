// `airlock image build AGENT [--force]`: build (or find) an agent's local
// erofs image: Debian 12 base + the agent CLI at its pinned version (+ the
// MCP servers of the user config); a PyPI agent's through a build VM. The
// registry verbs (pull, ls, rm, prune, inspect) are in image_store_cmd.cc.

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "agents/registry.h"
#include "cli/commands.h"
#include "cli/guest_install.h"
#include "cli/mcp_plan.h"
#include "cli/report.h"
#include "cli/terminal_ui.h"
#include "common/exit_codes.h"
#include "common/file_lock.h"
#include "config/effective.h"
#include "config/loader.h"
#include "image/agent_image.h"
#include "image/recipe.h"

namespace airlock::cli {
namespace {

struct ImageBuildArgs {
  std::string agent;
  bool force = false;
  bool quiet = false;
  bool noMcp = false;
  std::string from;
};

int buildImage(const HostContext& host, const ImageBuildArgs& args) {
  // The agents and MCP servers of your config, as `airlock run` builds them.
  const std::string userPath = config::userConfigPath(host.dirs.config);
  auto user = config::loadConfigFile(userPath);
  if (!user) return reportError(user.error());
  auto registry = config::registryWithCustomAgents(*user, userPath);
  if (!registry) return reportError(registry.error());
  auto spec = registry->find(args.agent);
  if (!spec) return reportError(spec.error());
  if (!spec->image.reference.empty())
    return reportError(Error{fmt::format("{} runs the OCI image {}, which is pulled, not built: airlock image pull {}",
                                         spec->name, spec->image.reference, spec->image.reference),
                             exit_code::kUsage});
  if (!args.from.empty() && spec->image.archive.empty() && spec->image.pypiPackage.empty())
    return reportError(Error{fmt::format("--from is for agents built from a release archive (crush) or PyPI "
                                         "(hermes); {} is built from npm alone",
                                         spec->name),
                             exit_code::kUsage});
  if (!args.noMcp) {
    config::ConfigSources sources{.user = *user, .userPath = userPath};
    const auto settings = config::resolve(*spec, sources).settings;
    config::applyMcpPackages(*spec, settings);
    std::vector<session::HomeFile> unused;
    auto mcp = planMcpServers(settings, {session::ImageSource::Kind::kAgentBuild, spec->name}, *spec, unused);
    if (!mcp) return reportError(mcp.error());
    if (!mcp->notice.empty() && !args.quiet) std::fprintf(stderr, "airlock: %s\n", mcp->notice.c_str());
  }
  const bool cached = !args.force && pathExists(image::agentImagePath(host.dirs.cache, *spec));
  auto say = [quiet = args.quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "airlock: %s\n", line.c_str());
  };
  const auto start = std::chrono::steady_clock::now();
  TerminalUi ui(host, args.quiet);  // a PyPI agent's build VM
  auto path = image::ensureAgentImage(host.dirs.cache, *spec, say,
                                      {.force = args.force,
                                       .fromDir = args.from,
                                       .guestInstall = buildVmInstaller(host, ui),
                                       .quiet = args.quiet});
  if (!path) return reportError(path.error());
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  struct stat st {};
  double mib = ::stat(path->c_str(), &st) == 0 ? double(st.st_size) / (1 << 20) : 0;
  std::printf("%s\n", path->c_str());
  const std::string how =
      cached ? "already built (use --force to rebuild)" : fmt::format("built in {:.1f} s", took.count());
  std::fprintf(stderr, "airlock: image %s: %.0f MiB, %s\n", spec->name.c_str(), mib, how.c_str());
  return 0;
}

}  // namespace

void addImageCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto args = std::make_shared<ImageBuildArgs>();
  auto* cmd = app.add_subcommand("image", "Images: pull from registries, list, remove, build agent images");
  cmd->require_subcommand(1);
  auto* build = cmd->add_subcommand(
      "build", "Build an agent's image: Debian 12 + the agent CLI (npm, or PyPI in a build VM), as erofs");
  build->footer(R"(The image is cached under ~/.cache/airlock/images by the digest of its recipe
(base packages, agent package and pinned version, and the npm packages of
the MCP servers in your config); the Debian base is built once with
mmdebstrap and shared by all agents. Prints the image path.

A PyPI agent (hermes, or your own with `image: {pypi_package: PKG,
version: "X.Y", binary: SCRIPT, install_as: NAME}`) is installed by pip
inside a build VM, never on this host: the VM boots its base (Debian 12
with python3-venv), reaches only pypi.org and files.pythonhosted.org (no
network at all with --from DIR), and only the venv it made at /opt/AGENT
enters the image, with /usr/local/bin/NAME running the package's console
script SCRIPT.

Examples:
  airlock image build claude-code
  airlock image build gemini --force
  airlock image build crush --from ~/Downloads   # its release archive, fetched elsewhere
  airlock image build hermes --from ~/wheels     # wheels from `pip download`, made elsewhere)");
  build->add_option("AGENT", args->agent, "Agent name (see `airlock agents`)")->required();
  build->add_flag("--force", args->force, "Rebuild even when the image is cached");
  build->add_flag("-q,--quiet", args->quiet, "Do not print progress lines");
  build->add_flag("--no-mcp", args->noMcp, "Leave out the MCP servers of your config (mcp_servers)");
  build
      ->add_option("--from", args->from,
                   "For a host that cannot download them: a directory holding the agent's release archive "
                   "(crush; checked against the SHA-256 its npm package names) or its wheels and sdists (hermes and "
                   "other PyPI agents), "
                   "installed by pip in a build VM without network")
      ->check(CLI::ExistingDirectory);
  build->callback([args, &exitCode, &host] { exitCode = buildImage(host, *args); });
  addImageStoreCommands(*cmd, exitCode, host);
  addImageArchiveCommands(*cmd, exitCode, host);
}

}  // namespace airlock::cli
