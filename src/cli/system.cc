// `airlock system df` and `airlock system prune`: what airlock keeps on disk,
// and removing what is no longer needed, in the manner of `docker system`.
//
//   sessions            finished runs (log, manifest, change set)
//   pending sessions    runs whose changes still wait for `airlock review -s ID`
//   OCI image store     pulled images (<cache>/oci; `airlock image rm`)
//   agent images        built agent images (<cache>/images; rebuilt on demand)
//   rootfs erofs cache  images of --rootfs / `image: DIR` trees (rebuilt on demand)
//   boot assets         the guest kernel and initramfs
//   npm downloads       agent CLI packages and npm's cache (<cache>/npm)
//   kernel downloads    the kernel package the boot assets are built from
//   release archives    agent programs an npm package names (Crush; <cache>/downloads/archives)
//   agent state         each agent's saved state per project (`airlock state rm`)
//
// prune removes finished sessions without pending changes, snapshots left by
// dead sessions and the rootfs erofs cache; --all adds pending sessions,
// agent images with the base rootfs tarball they are built on, and the
// downloads (fetched again when an image or the boot assets are rebuilt).
// A running session is never touched, nor a cache while a build holds its lock.

#include <sys/file.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "image/oci/image_store.h"
#include "image/recipe.h"
#include "image/rootfs_image.h"
#include "session/session.h"
#include "vm/boot_assets.h"

namespace airlock::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// Bytes of the regular files below `path` (or of `path` itself); symlinks not followed.
uint64_t bytesOf(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(path, ec))) return fs::file_size(path, ec);
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
    total += it->file_size(ec);
  }
  return total;
}

/// One thing prune may remove.
struct Removal {
  std::string what;  ///< "session", "snapshot", "rootfs image", "agent image"
  std::string path;
  uint64_t bytes = 0;
};

/// One line of `system df`.
struct Usage {
  std::string type;
  size_t count = 0;
  uint64_t bytes = 0;
  uint64_t reclaimable = 0;  ///< what `system prune` (without --all) frees
  std::string path;
};

/// Everything in the sessions directory and the caches, sorted into df lines
/// and prune candidates (`all`: pending sessions and agent images too).
struct Inventory {
  std::vector<Usage> usage;
  std::vector<Removal> removals;
};

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Inventory takeInventory(const HostDirs& dirs, bool all) {
  Inventory inv;
  const std::string sessions = session::sessionsDir(dirs.state);
  Usage finished{"sessions", 0, 0, 0, sessions};
  Usage pending{"pending sessions", 0, 0, 0, sessions};
  for (const auto& dir : entries(sessions)) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(dir, ec))) continue;
    uint64_t bytes = bytesOf(dir);
    bool running = session::sessionRunning(dir);
    bool hasPending = session::sessionHasPending(dir);
    Usage& u = hasPending ? pending : finished;
    ++u.count;
    u.bytes += bytes;
    if (running) continue;
    if (!hasPending || all) {
      inv.removals.push_back({hasPending ? "pending session" : "session", dir, bytes});
      if (!hasPending) u.reclaimable += bytes;
    } else if (fs::exists(dir + "/snapshot", ec)) {
      uint64_t snap = bytesOf(dir + "/snapshot");
      inv.removals.push_back({"snapshot of a dead session", dir + "/snapshot", snap});
      u.reclaimable += snap;
    }
  }
  inv.usage.push_back(finished);
  inv.usage.push_back(pending);

  auto store = image::oci::ImageStore::inCache(dirs.cache);
  inv.usage.push_back({"OCI image store", entries(store.imagesDir()).size(), bytesOf(store.root()), 0, store.root()});

  const std::string agentImages = image::imagesDir(dirs.cache);
  Usage agent{"agent images", 0, 0, 0, agentImages};
  const bool buildingAgent = lockHeld(agentImages + "/.lock");
  for (const auto& f : entries(agentImages)) {
    const bool base = fs::path(f).filename().string().starts_with("base-") && f.ends_with(".tar");
    if (!f.ends_with(".erofs") && !base) continue;
    if (!base) ++agent.count;
    uint64_t b = bytesOf(f);
    if (all && !buildingAgent) inv.removals.push_back({base ? "base rootfs tarball" : "agent image", f, b});
  }
  agent.bytes = bytesOf(agentImages);
  inv.usage.push_back(agent);

  const std::string rootfsCache = image::rootfsCacheDir(dirs.cache);
  Usage rootfs{"rootfs erofs cache", 0, 0, 0, rootfsCache};
  bool building = lockHeld(rootfsCache + "/.lock");
  for (const auto& f : entries(rootfsCache)) {
    if (f.ends_with("/.lock")) continue;
    uint64_t b = bytesOf(f);
    ++rootfs.count;
    rootfs.bytes += b;
    if (building) continue;  // a build in progress: its tmp- directory is in use
    inv.removals.push_back({"rootfs image", f, b});
    rootfs.reclaimable += b;
  }
  inv.usage.push_back(rootfs);

  const std::string bootAssets = vm::bootAssetsDir(dirs.cache);
  inv.usage.push_back({"boot assets", entries(bootAssets).size(), bytesOf(bootAssets), 0, bootAssets});

  // Downloads: everything but a build's lock file, removed with --all
  // unless a build holds the lock.
  auto downloads = [&](const char* type, const std::string& dir, const char* what) {
    Usage u{type, 0, 0, 0, dir};
    const bool busy = lockHeld(dir + "/.lock");
    for (const auto& f : entries(dir)) {
      if (f.ends_with("/.lock") || f == dir + "/archives") continue;  // archives: a row of its own
      uint64_t b = bytesOf(f);
      ++u.count;
      u.bytes += b;
      if (all && !busy) inv.removals.push_back({what, f, b});
    }
    inv.usage.push_back(u);
  };
  // The agents' saved state per project: never pruned (`airlock state rm`).
  const std::string states = dirs.data + "/state";
  Usage agentState{"agent state", 0, bytesOf(states), 0, states};
  for (const auto& dir : entries(states)) agentState.count += entries(dir).size();
  inv.usage.push_back(agentState);

  downloads("npm downloads", dirs.cache + "/npm", "npm download");
  downloads("kernel downloads", dirs.cache + "/downloads", "kernel download");
  downloads("release archives", dirs.cache + "/downloads/archives", "release archive");
  return inv;
}

int runDf(const HostContext& host, bool asJson) {
  auto inv = takeInventory(host.dirs, false);
  if (asJson) {
    json j = json::array();
    for (const auto& u : inv.usage)
      j.push_back({{"type", u.type}, {"count", u.count}, {"bytes", u.bytes}, {"reclaimable_bytes", u.reclaimable},
                   {"path", u.path}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%-20s %6s %12s %12s  %s\n", "TYPE", "COUNT", "SIZE", "RECLAIMABLE", "PATH");
  for (const auto& u : inv.usage)
    std::printf("%-20s %6zu %12s %12s  %s\n", u.type.c_str(), u.count, formatBytes(u.bytes).c_str(),
                formatBytes(u.reclaimable).c_str(), u.path.c_str());
  return 0;
}

struct PruneArgs {
  bool all = false;
  bool dryRun = false;
  bool force = false;
};

int runPrune(const HostContext& host, const PruneArgs& a) {
  auto inv = takeInventory(host.dirs, a.all);
  uint64_t total = 0;
  for (const auto& r : inv.removals) total += r.bytes;
  if (inv.removals.empty()) {
    std::printf("nothing to prune\n");
    return 0;
  }
  if (a.dryRun) {
    for (const auto& r : inv.removals)
      std::printf("would remove %s %s (%s)\n", r.what.c_str(), r.path.c_str(), formatBytes(r.bytes).c_str());
    std::printf("would reclaim %s\n", formatBytes(total).c_str());
    return 0;
  }
  if (!a.force && host.terminal.stdinTty) {
    std::fprintf(stderr, "This removes %zu item(s), %s:\n", inv.removals.size(), formatBytes(total).c_str());
    for (const auto& r : inv.removals) std::fprintf(stderr, "  %s %s\n", r.what.c_str(), r.path.c_str());
    std::fprintf(stderr, "Are you sure you want to continue? [y/N] ");
    char answer[16] = {};
    if (!std::fgets(answer, sizeof answer, stdin) || (answer[0] != 'y' && answer[0] != 'Y')) {
      std::fprintf(stderr, "airlock: nothing removed\n");
      return 0;
    }
  }
  uint64_t freed = 0;
  int code = 0;
  for (const auto& r : inv.removals) {
    // Checked again right before: a session may have started meanwhile.
    bool aSession = r.what == "session" || r.what == "pending session";
    if (aSession && session::sessionRunning(r.path)) continue;
    if (auto rm = removeTree(r.path); !rm) {
      std::fprintf(stderr, "airlock: cannot remove %s: %s\n", r.path.c_str(), rm.error().message.c_str());
      code = exit_code::kInternal;
      continue;
    }
    freed += r.bytes;
    std::printf("removed %s %s\n", r.what.c_str(), r.path.c_str());
  }
  std::printf("reclaimed %s\n", formatBytes(freed).c_str());
  return code;
}

}  // namespace

void addSystemCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto* sys = app.add_subcommand("system", "Disk usage of sessions and caches, and pruning what is no longer needed");
  sys->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  auto* df = sys->add_subcommand("df", "Show the space used by sessions, images and caches");
  df->add_flag("--json", *json, "machine-readable output");
  df->callback([json, &exitCode, &host] { exitCode = runDf(host, *json); });

  auto args = std::make_shared<PruneArgs>();
  auto* prune = sys->add_subcommand("prune", "Remove finished sessions, stale snapshots and the rootfs erofs cache");
  prune->footer(R"(Removes: finished sessions without pending changes, snapshots left by dead
sessions, the rootfs erofs cache (rebuilt on demand). Never a running session;
never pending changes unless --all, which also removes built agent images and
their base rootfs tarball, and the npm and kernel downloads (fetched again, from
registry.npmjs.org and Debian, when an image or the boot assets are rebuilt).
Pulled OCI images stay: remove them with `airlock image rm`.
Asks for confirmation on a terminal unless -f.)");
  prune->add_flag("-a,--all", args->all, "Also remove sessions with pending changes, agent images and downloads");
  prune->add_flag("--dry-run", args->dryRun, "List what would be removed and the space freed; remove nothing");
  prune->add_flag("-f,--force", args->force, "Do not ask for confirmation");
  prune->callback([args, &exitCode, &host] { exitCode = runPrune(host, *args); });
  addKernelCommand(*sys, exitCode, host);
}

}  // namespace airlock::cli
