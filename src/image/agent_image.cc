#include "image/agent_image.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "agents/mcp.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "image/base_rootfs.h"
#include "image/npm_packages.h"
#include "image/pypi_packages.h"
#include "image/recipe.h"
#include "image/release_archive.h"
#include "image/rootfs_staging.h"
#include "image/tar_member.h"

namespace airlock::image {
namespace {

/// Puts the pinned Node.js runtime at /usr/local/bin/node under `root`.
Result<> addNodeRuntime(const std::string& cacheDir, const std::string& root, const std::string& work,
                        const ProgressFn& progress) {
  const std::string nodePackage(kNodeRuntimePackage), nodeVersion(kNodeRuntimeVersion);
  auto node = fetchNpmPackage(cacheDir, nodePackage, nodeVersion, progress);
  if (!node) return std::unexpected(node.error());
  report(progress, fmt::format("adding Node.js {} as /usr/local/bin/node", nodeVersion));
  return extractPackageFile(*node, "bin/node", root + "/usr/local/bin/node", work, 0755);
}

/// Writes `wrapper` (a path in the guest): a script running the Node
/// program `script` (a path in the guest, which must be a file under
/// `root`; `what` names it in the error) with the image's Node.
Result<> writeNodeWrapper(const std::string& root, const std::string& script, const std::string& wrapper,
                          const std::string& what) {
  struct stat st {};  // lstat: a link there could lead out of the tree, on this host
  if (::lstat((root + script).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return failWith(exit_code::kImage, "{} has no file {}", what, script);
  if (script.find('\'') != std::string::npos) return failWith(exit_code::kImage, "{}: odd file name {}", what, script);
  return writeRootFile(root, wrapper.substr(1),
                       fmt::format("#!/bin/sh\nexec /usr/local/bin/node '{}' \"$@\"\n", script), 0755);
}

/// Puts the program of an `archive:` recipe at `dest`: the release archive
/// that the npm package's package.json names (downloaded, or taken from
/// `archiveDir`), checked against the SHA-256 given there.
Result<> installFromReleaseArchive(const std::string& cacheDir, const agents::AgentSpec& spec,
                                   const std::string& tarball, const std::string& dest, const std::string& work,
                                   const std::string& archiveDir, const ProgressFn& progress) {
  const auto& r = spec.image;
  const std::string manifest = work + "/package.json";
  if (auto done = extractPackageFile(tarball, "package.json", manifest, work, 0644); !done) return done;
  auto text = readFile(manifest);
  if (!text) return failWith(exit_code::kImage, "cannot read {}: {}", manifest, text.error().message);
  auto archive = parseReleaseArchive(*text, r.archive, r.programPackage() + "@" + r.programVersion());
  if (!archive) return std::unexpected(archive.error());
  auto file = fetchReleaseArchive(cacheDir, *archive, archiveDir, spec.name, progress);
  if (!file) return std::unexpected(file.error());
  const std::string member = archive->wrappedIn.empty() ? r.binary : archive->wrappedIn + "/" + r.binary;
  report(progress, fmt::format("copying {} from {} to /usr/local/bin/{}", member, archive->name, r.installAs));
  return extractTarMember(*file, member, dest, work, 0755, "check `binary` in the agent spec");
}

/// Puts the agent's program into the tree at `root`: the native binary, or
/// the Node runtime, the installed package and a wrapper script; then the
/// MCP servers' packages, each with its wrapper mcp-<name>.
Result<> installAgent(const std::string& cacheDir, const agents::AgentSpec& spec, const std::string& root,
                      const std::string& work, const ImageBuildOptions& options, const ProgressFn& progress) {
  const auto& r = spec.image;
  const std::string bin = root + "/usr/local/bin";
  if (auto made = makeDirs(bin, 0755); !made) return failWith(exit_code::kImage, "{}", made.error().message);
  if (r.baseOnly()) {
    // `image: {}`: the base image's own programs
  } else if (!r.pypiPackage.empty()) {
    // installed by the build VM (installInBuildVm)
  } else if (!r.node) {
    auto tarball = fetchNpmPackage(cacheDir, r.programPackage(), r.programVersion(), progress);
    if (!tarball) return std::unexpected(tarball.error());
    if (!r.archive.empty()) {
      if (auto done = installFromReleaseArchive(cacheDir, spec, *tarball, bin + "/" + r.installAs, work,
                                                options.fromDir, progress);
          !done)
        return done;
    } else {
      report(progress, fmt::format("copying {} to /usr/local/bin/{}", r.binary, r.installAs));
      if (auto done = extractPackageFile(*tarball, r.binary, bin + "/" + r.installAs, work, 0755); !done) return done;
    }
  } else {
    if (auto done = addNodeRuntime(cacheDir, root, work, progress); !done) return done;
    const std::string prefix = "/opt/" + spec.name;
    if (auto done = installNpmPackage(cacheDir, root + prefix, r.npmPackage, r.version, progress); !done) return done;
    const std::string what = fmt::format("{}@{} (check `binary` in the agent spec)", r.npmPackage, r.version);
    if (auto done = writeNodeWrapper(root, fmt::format("{}/node_modules/{}/{}", prefix, r.npmPackage, r.binary),
                                     "/usr/local/bin/" + r.installAs, what);
        !done)
      return done;
  }
  if (r.mcpPackages.empty()) return {};
  if (!r.node)
    if (auto done = addNodeRuntime(cacheDir, root, work, progress); !done) return done;
  for (const auto& [name, pin] : r.mcpPackages) {
    auto parsed = agents::parseNpmPin(pin);
    if (!parsed) return std::unexpected(parsed.error());
    const auto& [package, version] = *parsed;
    const std::string prefix = "/opt/mcp/" + name;
    report(progress, fmt::format("adding MCP server {} ({})", name, pin));
    if (auto done = installNpmPackage(cacheDir, root + prefix, package, version, progress); !done) return done;
    const std::string manifest = fmt::format("{}{}/node_modules/{}/package.json", root, prefix, package);
    auto text = readFile(manifest);
    if (!text) return failWith(exit_code::kImage, "cannot read {}: {}", manifest, text.error().message);
    auto script = npmPackageBin(*text, package);
    if (!script) return std::unexpected(script.error());
    if (auto done = writeNodeWrapper(root, fmt::format("{}/node_modules/{}/{}", prefix, package, *script),
                                     agents::mcpWrapperPath(name), pin + " (its package.json \"bin\")");
        !done)
      return done;
  }
  return {};
}

/// Writes the erofs image of the tree `root` to `built` (`what` names it in errors).
Result<> writeErofs(const std::string& root, const std::string& built, const std::string& what) {
  std::vector<std::string> mkfs = {"mkfs.erofs", "--quiet", "--preserve-mtime"};
  if (::geteuid() != 0) mkfs.push_back("--all-root");
  mkfs.insert(mkfs.end(), {built, root});
  if (auto r = runChecked(mkfs); !r)
    return failWith(exit_code::kImage, "mkfs.erofs failed for the {}: {}", what, r.error().message);
  return {};
}

/// A `pypi_package:` recipe: the tree at `root` (the base with python3-venv
/// and the agent user) booted as a build VM whose pip installs the package
/// into a venv at /opt/<agent>; the venv, from the VM's export, laid into
/// `root` (image/pypi_packages.h).
Result<> installInBuildVm(const agents::AgentSpec& spec, const std::string& root, const std::string& work,
                          const ImageBuildOptions& options, const ProgressFn& progress) {
  const auto& r = spec.image;
  const std::string prefix = "/opt/" + spec.name;
  GuestInstall install{.agent = spec.name, .image = work + "/build-vm.erofs", .workspace = work + "/build-workspace"};
  if (auto made = makeDirs(install.workspace, 0755); !made) return made;
  if (!options.fromDir.empty()) {
    auto staged = stageDistributions(options.fromDir, install.workspace, r.pypiPackage, r.version);
    if (!staged) return std::unexpected(staged.error());
    report(progress, fmt::format("installing {}=={} from the {} files of {} in a build VM (no network)",
                                 r.pypiPackage, r.version, *staged, options.fromDir));
  } else {
    install.hosts = pypiHosts();
    report(progress, fmt::format("installing {}=={} from PyPI in a build VM (egress: pypi.org, "
                                 "files.pythonhosted.org only)",
                                 r.pypiPackage, r.version));
  }
  install.script = pipInstallScript(r.pypiPackage, r.version, prefix, !options.fromDir.empty(), options.quiet);
  if (auto done = writeErofs(root, install.image, "build VM's image"); !done) return done;
  const std::string scratch = work + "/build-export";
  if (::mkdir(scratch.c_str(), 0755) != 0)
    return failWith(exit_code::kImage, "cannot create {}: {}", scratch, errnoText(errno));
  auto done = options.guestInstall(install, [&](const std::string& changeSet) -> Result<> {
    report(progress, fmt::format("laying the venv at {} into the image", prefix));
    return layVenv(changeSet, scratch, root, prefix, r.binary, r.installAs, spec.name);
  });
  ::unlink(install.image.c_str());
  return done;
}

/// Builds the image at `image` (the cache lock is held).
Result<> buildAgentImage(const std::string& cacheDir, const agents::AgentSpec& spec, const std::string& dir,
                         const std::string& image, const ImageBuildOptions& options, const ProgressFn& progress) {
  if (auto r = removeStaleBuilds(dir); !r) return r;
  for (const char* tool : {"tar", "mkfs.erofs"}) {
    if (findProgram(tool).empty())
      return failWith(exit_code::kHostNotReady, "{} is not installed; run scripts/setup", tool);
  }
  const auto& r = spec.image;
  if (!r.pypiPackage.empty()) {
    if (!options.guestInstall) return failWith(exit_code::kInternal, "no build VM for the PyPI recipe of {}", spec.name);
    // An unreachable PyPI fails before anything is built.
    if (options.fromDir.empty())
      if (auto ok = checkPypiReachable(spec.name, r.pypiPackage, r.version); !ok) return ok;
  }
  auto base = ensureBaseTarball(dir, baseExtraPackages(spec.image), progress);
  if (!base) return std::unexpected(base.error());
  auto work = TempDir::create(dir, "tmp-");
  if (!work) return std::unexpected(work.error());
  const std::string root = work->path() + "/root";
  if (::mkdir(root.c_str(), 0755) != 0 || ::chmod(root.c_str(), 0755) != 0)
    return failWith(exit_code::kImage, "cannot create {}: {}", root, errnoText(errno));
  report(progress, "unpacking the base rootfs");
  if (auto done = unpackBase(*base, root); !done) return done;
  if (auto done = addAgentUser(root); !done) return done;
  if (auto done = installAgent(cacheDir, spec, root, work->path(), options, progress); !done) return done;
  // Last: nothing on this host writes into the tree once the guest's venv is in it.
  if (!r.pypiPackage.empty()) {
    if (auto done = installInBuildVm(spec, root, work->path(), options, progress); !done) return done;
  }
  report(progress, "writing the erofs image");
  const std::string built = work->path() + "/image.erofs";
  if (auto done = writeErofs(root, built, spec.name + " image"); !done) return done;
  if (auto done = syncPath(built); !done) return done;
  if (::rename(built.c_str(), image.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot rename {} to {}: {}", built, image, errnoText(errno));
  return syncPath(dir);
}

}  // namespace

Result<std::string> ensureAgentImage(const std::string& cacheDir, const agents::AgentSpec& spec,
                                     const ProgressFn& progress, const ImageBuildOptions& options) {
  const std::string image = agentImagePath(cacheDir, spec);
  if (!options.force && pathExists(image)) return image;
  const auto start = std::chrono::steady_clock::now();
  ProgressFn timed = [&progress, start, name = spec.name](const std::string& line) {
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    report(progress, fmt::format("[{:6.1f}s] image {}: {}", elapsed.count(), name, line));
  };
  const std::string dir = imagesDir(cacheDir);
  if (auto r = makeDirs(dir); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  auto lock = FileLock::acquire(dir + "/.lock", "building agent images", timed);
  if (!lock) return failWith(exit_code::kImage, "{}", lock.error().message);
  if (!options.force && pathExists(image)) return image;
  auto built = buildAgentImage(cacheDir, spec, dir, image, options, timed);
  if (!built) {
    Error e = built.error();
    if (e.code == Error{}.code) e.code = exit_code::kImage;
    e.message = fmt::format("cannot build the {} image: {}", spec.name, e.message);
    return std::unexpected(e);
  }
  timed("done");
  return image;
}

}  // namespace airlock::image
