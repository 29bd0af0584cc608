#pragma once
// Shared state of the VM tests: the busybox test rootfs (built once per run)
// and a per-test state directory, so each test can check nothing was left.

#include <string>

#include "common/host_context.h"

namespace airlock::test {

/// Directory of the test rootfs built by tests/vm/make-test-rootfs.sh.
const std::string& testRootfs();

/// The erofs image of testRootfs() that in-process Machines boot (built once
/// per run, in the cache of this host).
const std::string& testRootImage();

/// Why VM tests cannot run on this host ("" when they can).
const std::string& vmSkipReason();

/// A fresh state directory for one test: the XDG_STATE_HOME of the airlock
/// processes it starts, and of its in-process Machines through testHost().
std::string freshStateDir();

/// The host context of an in-process Machine: this host's (the shared boot
/// assets in its cache), with the state of XDG_STATE_HOME=`stateDir`, this
/// build's airlock as the janitor ($AIRLOCK_EXE), and `initBinary` (empty:
/// this build's airlock-init) as $AIRLOCK_INIT.
HostContext testHost(const std::string& stateDir, const std::string& initBinary = "");

/// Entries left in <state>/airlock/vms (VM run directories); "" when empty.
std::string leftoverRunDirs(const std::string& stateDir);

}  // namespace airlock::test

#define SKIP_WITHOUT_VMS()                                                        \
  do {                                                                            \
    if (!::airlock::test::vmSkipReason().empty())                                 \
      GTEST_SKIP() << "VM tests cannot run here: " << ::airlock::test::vmSkipReason(); \
  } while (0)
