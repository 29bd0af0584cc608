#pragma once
// Shared state of the VM tests: the busybox test rootfs (built once per run)
// and a per-test state directory, so each test can check nothing was left.

#include <string>

namespace airlock::test {

/// Directory of the test rootfs built by tests/vm/make-test-rootfs.sh.
const std::string& testRootfs();

/// Why VM tests cannot run on this host ("" when they can).
const std::string& vmSkipReason();

/// Fresh XDG_STATE_HOME for one test; also set in this process's environment.
std::string freshStateDir();

/// Entries left in <state>/airlock/vms (VM run directories); "" when empty.
std::string leftoverRunDirs(const std::string& stateDir);

}  // namespace airlock::test

#define SKIP_WITHOUT_VMS()                                                        \
  do {                                                                            \
    if (!::airlock::test::vmSkipReason().empty())                                 \
      GTEST_SKIP() << "VM tests cannot run here: " << ::airlock::test::vmSkipReason(); \
  } while (0)
