#include "vm/accel.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>

#include "common/exit_codes.h"

namespace airlock::vm {
namespace {

TEST(Accel, KvmPvmWithoutVirtFlagsFallsBackToTcgAndSaysWhy) {
  bool probed = false;
  auto c = chooseAccel(AccelRequest::kAuto, {true, false, true}, [&] { return probed = true; });
  EXPECT_EQ(c.accel, Accel::kTcg);
  EXPECT_FALSE(probed) << "no boot probe is needed when the facts already rule KVM out";
  EXPECT_NE(c.warning.find("kvm_pvm"), std::string::npos);
  EXPECT_NE(c.warning.find("TCG"), std::string::npos);
}

TEST(Accel, MissingDeviceFallsBackToTcg) {
  auto c = chooseAccel(AccelRequest::kAuto, {false, true, false}, [] { return true; });
  EXPECT_EQ(c.accel, Accel::kTcg);
  EXPECT_NE(c.warning.find("/dev/kvm"), std::string::npos);
}

// As root, QEMU runs as a jail uid whose only extra group is /dev/kvm's:
// a /dev/kvm only root can open must not select KVM.
TEST(Accel, ForAJailedQemuKvmNeedsAGroupOtherThanRoot) {
  HostFacts jailed = forJailedQemu({true, true, false});
  struct stat st {};
  bool groupUsable = ::stat("/dev/kvm", &st) == 0 && st.st_gid != 0 && (st.st_mode & 060) == 060;
  EXPECT_EQ(jailed.kvmDeviceUsable, groupUsable);
  auto c = chooseAccel(AccelRequest::kAuto, {false, true, false, EPERM}, [] { return true; });
  EXPECT_EQ(c.accel, Accel::kTcg);
  EXPECT_NE(c.warning.find("QEMU's unprivileged uid"), std::string::npos) << c.warning;
  EXPECT_FALSE(forJailedQemu({false, true, false, ENOENT}).kvmDeviceUsable);
}

TEST(Accel, UsableKvmIsConfirmedByTheBootProbe) {
  auto ok = chooseAccel(AccelRequest::kAuto, {true, true, false}, [] { return true; });
  EXPECT_EQ(ok.accel, Accel::kKvm);
  EXPECT_TRUE(ok.warning.empty());
  auto failed = chooseAccel(AccelRequest::kAuto, {true, true, false}, [] { return false; });
  EXPECT_EQ(failed.accel, Accel::kTcg);
  EXPECT_NE(failed.warning.find("test boot"), std::string::npos);
}

TEST(Accel, ExplicitRequestWins) {
  EXPECT_EQ(chooseAccel(AccelRequest::kKvm, {false, false, true}, [] { return false; }).accel, Accel::kKvm);
  EXPECT_EQ(chooseAccel(AccelRequest::kTcg, {true, true, false}, [] { return true; }).accel, Accel::kTcg);
}

TEST(Accel, ParsesFlagValues) {
  AccelRequest r;
  EXPECT_TRUE(parseAccel("kvm", r));
  EXPECT_EQ(r, AccelRequest::kKvm);
  EXPECT_TRUE(parseAccel("auto", r));
  EXPECT_FALSE(parseAccel("hvf", r));
}

// --accel kvm on a host whose facts rule KVM out is refused before boot
// (exit 65, with the reason), not a 30 s wait for a guest that never starts.
TEST(Accel, ForcedKvmOnAnUnusableHostIsRefusedWithTheReason) {
  auto pvm = checkAccelRequest(AccelRequest::kKvm, {true, false, true});
  ASSERT_FALSE(pvm);
  EXPECT_EQ(pvm.error().code, exit_code::kHostNotReady);
  EXPECT_NE(pvm.error().message.find("kvm_pvm"), std::string::npos) << pvm.error().message;
  EXPECT_NE(pvm.error().message.find("--accel auto"), std::string::npos);
  auto missing = checkAccelRequest(AccelRequest::kKvm, {false, true, false});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/dev/kvm"), std::string::npos);
  EXPECT_TRUE(checkAccelRequest(AccelRequest::kKvm, {true, true, false}));
  EXPECT_TRUE(checkAccelRequest(AccelRequest::kAuto, {false, false, false}));
  EXPECT_TRUE(checkAccelRequest(AccelRequest::kTcg, {false, false, false}));
}

// A kvm_pvm host whose /dev/kvm the user cannot open: the reason is the
// hardware, which no group or mode fixes (a new user was told to join a
// kvm group this host does not have).
TEST(Accel, WhatTheHardwareCannotDoComesBeforePermissions) {
  auto c = chooseAccel(AccelRequest::kAuto, {false, false, true, EACCES}, [] { return true; });
  EXPECT_EQ(c.accel, Accel::kTcg);
  EXPECT_NE(c.warning.find("kvm_pvm"), std::string::npos) << c.warning;
  c = chooseAccel(AccelRequest::kAuto, {false, false, false, EPERM}, [] { return true; });
  EXPECT_NE(c.warning.find("no VT-x/AMD-V"), std::string::npos) << c.warning;
  c = chooseAccel(AccelRequest::kAuto, {false, true, false, EACCES}, [] { return true; });
  EXPECT_NE(c.warning.find("not read-write for your user"), std::string::npos) << c.warning;
}

}  // namespace
}  // namespace airlock::vm
