// `airlock system kernel build`: builds airlock's own guest kernel
// (vm/guest_kernel.h) into the cache; every later boot uses it.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/report.h"
#include "common/exit_codes.h"
#include "common/interrupt.h"
#include "vm/guest_kernel.h"

namespace airlock::cli {
namespace {

struct KernelBuildArgs {
  bool force = false;
  bool quiet = false;
  unsigned jobs = 0;  ///< 0: one per online CPU
  std::string source = vm::kKernelSourceTarball;
};

int buildKernel(const HostContext& host, const KernelBuildArgs& args) {
  auto say = [quiet = args.quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "airlock: %s\n", line.c_str());
  };
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  unsigned jobs = args.jobs ? args.jobs : static_cast<unsigned>(cpus > 0 ? cpus : 1);
  const auto start = std::chrono::steady_clock::now();
  InterruptScope interrupts;
  auto dir =
      vm::buildGuestKernel(host.dirs.cache, {.sourceTarball = args.source, .jobs = jobs, .force = args.force}, say);
  int sig = interrupts.end();
  if (!dir) return reportError(sig ? interruptedError(sig, "the guest kernel build") : dir.error());
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::printf("%s/vmlinux\n", dir->c_str());
  say(fmt::format("guest kernel ready ({:.0f} s)", took.count()));
  return 0;
}

}  // namespace

void addKernelCommand(CLI::App& system, int& exitCode, const HostContext& host) {
  auto* kernel = system.add_subcommand("kernel", "airlock's own guest kernel (faster boots than Debian's)");
  kernel->require_subcommand(1);
  auto args = std::make_shared<KernelBuildArgs>();
  auto* build = kernel->add_subcommand("build", "Build the guest kernel from Debian's linux-source-6.1 into the cache");
  build->footer(R"(Builds Linux from /usr/src/linux-source-6.1.tar.xz (package linux-source-6.1)
with airlock's configuration: `make allnoconfig` plus kernel/guest.config,
every driver built in, no modules. Takes several minutes and ~1.5 GB of
temporary space in the cache; the kernel itself is ~15 MB. Every VM boots it
from then on (run, run-image, image builds); without it airlock boots Debian's
cloud kernel and loads its modules, which is slower. scripts/build runs this.
Prints the path of the vmlinux. Needs: linux-source-6.1 make gcc bc bison
flex libelf-dev libssl-dev.

Examples:
  airlock system kernel build
  airlock system kernel build --force -j 4)");
  build->add_flag("--force", args->force, "Rebuild even when the kernel is cached");
  build->add_flag("-q,--quiet", args->quiet, "Do not print progress lines");
  build->add_option("-j,--jobs", args->jobs, "Parallel compile jobs (default: one per CPU)")
      ->check(CLI::Range(1u, 256u));
  build->add_option("--source", args->source, "The kernel source tarball")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  build->callback([args, &exitCode, &host] { exitCode = buildKernel(host, *args); });
}

}  // namespace airlock::cli
