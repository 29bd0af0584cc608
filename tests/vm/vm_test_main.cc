// Entry point of the VM tests: prepares the test rootfs and its erofs image once.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <dirent.h>

#include "airlock_process.h"
#include "image/rootfs_image.h"
#include "vm_test_env.h"

extern char** environ;

namespace airlock::test {
namespace {

std::string gRootfs;
std::string gRootImage;
std::string gSkip;
std::string gScratch;

}  // namespace

const std::string& testRootfs() { return gRootfs; }
const std::string& testRootImage() { return gRootImage; }
const std::string& vmSkipReason() { return gSkip; }

std::string freshStateDir() {
  char tmpl[256];
  snprintf(tmpl, sizeof tmpl, "%s/state-XXXXXX", gScratch.c_str());
  return mkdtemp(tmpl);
}

HostContext testHost(const std::string& stateDir, const std::string& initBinary) {
  HostContext host = readHostContext(environ);
  host.dirs.state = stateDir + "/airlock";
  host.env["AIRLOCK_EXE"] = AIRLOCK_BINARY;
  host.env["AIRLOCK_INIT"] = initBinary.empty() ? AIRLOCK_INIT_BINARY : initBinary;
  return host;
}

std::string leftoverRunDirs(const std::string& stateDir) {
  std::string left;
  if (DIR* d = opendir((stateDir + "/airlock/vms").c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') left += std::string(e->d_name) + " ";
    closedir(d);
  }
  return left;
}

}  // namespace airlock::test

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  using namespace airlock::test;
  char tmpl[] = "/tmp/airlock-vmtest-XXXXXX";
  gScratch = mkdtemp(tmpl);
  gRootfs = gScratch + "/rootfs";
  // The airlock processes the tests start find this build's airlock-init.
  setenv("AIRLOCK_INIT", AIRLOCK_INIT_BINARY, 1);
  if (geteuid() != 0) {
    gSkip = "virtiofsd needs root; run the VM tests as root";
  } else if (access("/usr/bin/qemu-system-x86_64", X_OK) != 0) {
    gSkip = "qemu-system-x86_64 is not installed; run scripts/setup";
  } else {
    std::string cmd = std::string("bash ") + AIRLOCK_SOURCE_DIR + "/tests/vm/make-test-rootfs.sh " + gRootfs +
                      " >/dev/null";
    if (std::system(cmd.c_str()) != 0) gSkip = "cannot build the test rootfs (busybox-static missing?)";
  }
  if (gSkip.empty()) {
    auto image = airlock::image::ensureRootfsImage(airlock::readHostContext(environ).dirs.cache, gRootfs, {});
    if (!image) {
      std::fprintf(stderr, "cannot build the erofs image of the test rootfs: %s\n", image.error().message.c_str());
      return 1;
    }
    gRootImage = *image;
  }
  int rc = RUN_ALL_TESTS();
  std::system(("rm -rf " + gScratch).c_str());
  return rc;
}
