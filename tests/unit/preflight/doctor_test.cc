// airlock doctor with each check forced to fail through a fake host probe.

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/fd.h"
#include "common/paths.h"
#include "preflight/doctor.h"
#include "vm/guest_kernel.h"

namespace airlock::preflight {
namespace {

/// A host where everything is ready, until a test takes something away.
class FakeProbe : public HostProbe {
 public:
  vm::HostFacts facts{true, true, false};
  std::set<std::string> missing;
  std::map<std::string, std::string> outputs = {
      {"--version", "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7)\n"},
      {"help", "Supported machines are:\nmicrovm              microvm (i386)\npc    Standard PC\n"}};
  bool virtiofsd = true;
  uint64_t free = 100ull << 30;
  std::string maxUserNamespaces = "15000\n";
  uid_t uid = 0;
  std::string user = "root";
  std::map<std::string, std::string> files = {  ///< /etc/subuid, /etc/subgid, ...
      {"/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n"}};
  int tunError = 0;

  vm::HostFacts hostFacts() override { return facts; }
  std::string findOnPath(const std::string& name) override {
    return missing.contains(name) ? "" : "/usr/bin/" + name;
  }
  bool isExecutable(const std::string&) override { return virtiofsd; }
  Result<std::string> output(const std::vector<std::string>& argv) override {
    auto it = outputs.find(argv.back());
    if (it == outputs.end()) return fail("{} failed", argv[0]);
    return it->second;
  }
  std::optional<std::string> readText(const std::string& path) override {
    if (path == "/proc/sys/user/max_user_namespaces") return maxUserNamespaces;
    if (auto it = files.find(path); it != files.end()) return it->second;
    return std::nullopt;
  }
  Result<uint64_t> freeBytes(const std::string&) override { return free; }
  uid_t effectiveUid() override { return uid; }
  std::string userName() override { return user; }
  int accessError(const std::string& path, int mode) override {
    if (path != "/dev/net/tun") return 0;
    return mode == F_OK && tunError != ENOENT ? 0 : tunError;  // F_OK: only existence
  }
};

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("/tmp", "airlock-doctor-");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    cache_ = dir_->path() + "/cache";
    state_ = dir_->path() + "/state";
  }

  CheckResult check(const std::string& name, const DoctorLimits& limits = {}) {
    for (auto& r : runDoctor(probe_, cache_, state_, limits))
      if (r.name == name) return r;
    ADD_FAILURE() << "no check named " << name;
    return {};
  }

  void touch(const std::string& path, const std::string& text = "") {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }

  /// What `airlock system kernel build` leaves in the cache.
  void buildOwnKernel() {
    const std::string own = cache_ + "/assets/" + vm::guestKernelDirName(vm::guestKernelConfig());
    touch(own + "/vmlinux");
    touch(own + "/modules/load-order");
    touch(own + "/release", "6.1.158-airlock\n");
  }

  FakeProbe probe_;
  std::optional<TempDir> dir_;
  std::string cache_, state_;
};

TEST_F(DoctorTest, ReadyHostIsAllOk) {
  buildOwnKernel();
  for (const auto& r : runDoctor(probe_, cache_, state_))
    EXPECT_EQ(r.status, CheckStatus::kOk) << r.name << ": " << r.detail;
}

TEST_F(DoctorTest, EveryCheckHasAFixWhenNotOk) {
  probe_.facts = {};
  probe_.missing = {"qemu-system-x86_64", "mkfs.erofs", "mkfs.ext4", "mmdebstrap", "newuidmap", "newgidmap", "apt-get"};
  probe_.virtiofsd = false;
  probe_.free = 1;
  probe_.maxUserNamespaces = "0";
  probe_.uid = 1000;
  probe_.user = "alice";
  probe_.tunError = EACCES;
  auto results = runDoctor(probe_, cache_, state_);
  EXPECT_EQ(results.size(), 22u);
  for (const auto& r : results) {
    if (r.status != CheckStatus::kOk) {
      EXPECT_FALSE(r.fix.empty()) << r.name;
    }
  }
}

struct MissingTool {
  const char* name;
  CheckStatus status;
  const char* package;
};

class DoctorMissingTool : public DoctorTest, public ::testing::WithParamInterface<MissingTool> {};

TEST_P(DoctorMissingTool, IsReportedWithItsPackage) {
  probe_.uid = 1000;  // newuidmap is checked only when not root
  probe_.missing.insert(GetParam().name);
  auto r = check(GetParam().name);
  EXPECT_EQ(r.status, GetParam().status);
  EXPECT_NE(r.detail.find("not found on PATH"), std::string::npos) << r.detail;
  EXPECT_NE(r.fix.find(GetParam().package), std::string::npos) << r.fix;
}

INSTANTIATE_TEST_SUITE_P(Tools, DoctorMissingTool,
                         ::testing::Values(MissingTool{"mkfs.erofs", CheckStatus::kFail, "erofs-utils"},
                                           MissingTool{"mkfs.ext4", CheckStatus::kFail, "e2fsprogs"},
                                           MissingTool{"mmdebstrap", CheckStatus::kFail, "mmdebstrap"},
                                           MissingTool{"newuidmap", CheckStatus::kFail, "uidmap"}));

TEST_F(DoctorTest, NoCheckForToolsNothingRuns) {
  // The egress firewall uses libnftables and its own tap networking: neither
  // the nft binary nor pasta/passt is run by anything.
  for (const auto& r : runDoctor(probe_, cache_, state_)) {
    EXPECT_NE(r.name, "pasta");
    EXPECT_NE(r.name, "nft");
    EXPECT_EQ(r.fix.find("passt"), std::string::npos) << r.name;
  }
}

TEST_F(DoctorTest, KvmThatIsNotReadWriteForTheUserNamesTheGroupFix) {
  probe_.uid = 1000;
  probe_.user = "alice";
  probe_.facts = {false, true, false, EACCES};
  auto r = check("kvm");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_NE(r.detail.find("not read-write for your user"), std::string::npos) << r.detail;
  EXPECT_TRUE(r.fix.starts_with("sudo usermod -aG kvm alice, then log in again")) << r.fix;
  EXPECT_NE(r.fix.find("sudo groupadd -f kvm"), std::string::npos) << "a host without a kvm group: " << r.fix;
  probe_.user = "";  // a uid without a passwd entry
  EXPECT_TRUE(check("kvm").fix.starts_with("sudo usermod -aG kvm 1000, then log in again")) << check("kvm").fix;
  probe_.facts = {false, true, false, ENOENT};
  EXPECT_NE(check("kvm").detail.find("/dev/kvm is missing"), std::string::npos) << check("kvm").detail;
  // kvm_pvm without VT-x: no group helps; the fix is the hardware's.
  probe_.facts = {false, false, true, EACCES};
  r = check("kvm");
  EXPECT_NE(r.detail.find("kvm_pvm"), std::string::npos) << r.detail;
  EXPECT_EQ(r.fix.find("usermod"), std::string::npos) << r.fix;
}

TEST_F(DoctorTest, TunThatIsNotReadWriteForTheUserFailsWithTheSetupFix) {
  probe_.tunError = EACCES;
  EXPECT_EQ(check("tun").status, CheckStatus::kOk) << "root opens /dev/net/tun whatever its mode";
  probe_.tunError = ENOENT;
  EXPECT_EQ(check("tun").fix, "sudo modprobe tun") << "not even root opens a missing device";
  probe_.tunError = EACCES;
  probe_.uid = 1000;
  auto r = check("tun");
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.detail.find("no session with network can start"), std::string::npos) << r.detail;
  EXPECT_NE(r.fix.find("scripts/setup"), std::string::npos) << r.fix;
  EXPECT_NE(r.fix.find("sudo chmod 0666 /dev/net/tun"), std::string::npos) << r.fix;
  probe_.tunError = ENOENT;
  EXPECT_EQ(check("tun").fix, "sudo modprobe tun");
  probe_.tunError = 0;
  EXPECT_EQ(check("tun").status, CheckStatus::kOk);
}

TEST_F(DoctorTest, CgroupLimitsNeedRootAndCgroupV2) {
  auto r = check("cgroup");
  EXPECT_EQ(r.status, CheckStatus::kOk) << r.detail;
  EXPECT_NE(r.detail.find("cgroup of its own"), std::string::npos) << r.detail;
  probe_.files.erase("/sys/fs/cgroup/cgroup.controllers");  // cgroup v1: a tmpfs of v1 hierarchies
  r = check("cgroup");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_NE(r.detail.find("cgroup v1"), std::string::npos) << r.detail;
  EXPECT_NE(r.fix.find("systemd.unified_cgroup_hierarchy=1"), std::string::npos) << r.fix;
  probe_.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu io\n";
  EXPECT_EQ(check("cgroup").status, CheckStatus::kWarn);
  probe_.files["/sys/fs/cgroup/cgroup.controllers"] = "memory pids\n";
  probe_.uid = 1000;
  r = check("cgroup");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_NE(r.fix.find("systemd-run --user --scope"), std::string::npos) << r.fix;
}

TEST_F(DoctorTest, RootNeedsNoSubordinateIds) {
  EXPECT_EQ(check("root").status, CheckStatus::kOk);
  for (const auto& r : runDoctor(probe_, cache_, state_)) {
    EXPECT_NE(r.name, "subuid");
    EXPECT_NE(r.name, "newuidmap");
  }
}

TEST_F(DoctorTest, NonRootFailsEachMissingPrerequisiteWithItsFix) {
  probe_.uid = 1000;
  probe_.user = "alice";
  probe_.missing = {"newuidmap", "newgidmap"};
  auto results = runDoctor(probe_, cache_, state_);
  std::map<std::string, CheckResult> byName;
  for (const auto& r : results) byName[r.name] = r;
  // Root itself is not a prerequisite (issue 14): QEMU and virtiofsd run in user namespaces.
  EXPECT_EQ(byName["root"].status, CheckStatus::kOk);
  EXPECT_NE(byName["root"].detail.find("not needed"), std::string::npos) << byName["root"].detail;
  EXPECT_EQ(byName["newuidmap"].status, CheckStatus::kFail);
  EXPECT_TRUE(byName["newuidmap"].fix.starts_with("sudo apt-get install uidmap")) << byName["newuidmap"].fix;
  EXPECT_EQ(byName["newgidmap"].status, CheckStatus::kFail);
  EXPECT_EQ(byName["subuid"].status, CheckStatus::kFail);
  EXPECT_TRUE(byName["subuid"].fix.starts_with("sudo usermod --add-subuids 100000-165535 alice ("))
      << byName["subuid"].fix;
  EXPECT_EQ(byName["subgid"].status, CheckStatus::kFail);
  EXPECT_TRUE(byName["subgid"].fix.starts_with("sudo usermod --add-subgids 100000-165535 alice ("))
      << byName["subgid"].fix;
  EXPECT_NE(byName["subgid"].detail.find("virtiofsd"), std::string::npos) << byName["subgid"].detail;
}

TEST_F(DoctorTest, NonRootWithSubordinateIdsPassesThoseChecks) {
  probe_.uid = 1000;
  probe_.user = "alice";
  probe_.files = {{"/etc/subuid", "bob:100000:65536\nalice:165536:65536\n"}, {"/etc/subgid", "1000:100000:65536\n"}};
  EXPECT_EQ(check("subuid").status, CheckStatus::kOk);
  EXPECT_EQ(check("subgid").status, CheckStatus::kOk);  // by uid
  EXPECT_EQ(check("newuidmap").status, CheckStatus::kOk);
  probe_.files["/etc/subuid"] = "alice:165536:1000\n";  // too small for mmdebstrap
  EXPECT_EQ(check("subuid").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, MissingQemuFailsQemuAndMicrovm) {
  probe_.missing.insert("qemu-system-x86_64");
  EXPECT_EQ(check("qemu").status, CheckStatus::kFail);
  EXPECT_NE(check("qemu").fix.find("qemu-system-x86"), std::string::npos);
  EXPECT_EQ(check("microvm").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, QemuWithoutMicrovmFails) {
  probe_.outputs["help"] = "Supported machines are:\npc    Standard PC\nmicrovm-like  not it\n";
  EXPECT_EQ(check("microvm").status, CheckStatus::kFail);
  EXPECT_EQ(check("qemu").status, CheckStatus::kOk);
  EXPECT_NE(check("qemu").detail.find("7.2.22"), std::string::npos);
}

TEST_F(DoctorTest, QemuWithoutVersionFails) {
  probe_.outputs.erase("--version");
  EXPECT_EQ(check("qemu").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, KvmPvmWithoutVirtWarnsTcg) {
  probe_.facts = {true, false, true};
  auto r = check("kvm");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_NE(r.detail.find("kvm_pvm"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("TCG"), std::string::npos) << r.detail;
}

TEST_F(DoctorTest, NoDevKvmWarnsTcg) {
  probe_.facts = {false, true, false};
  EXPECT_EQ(check("kvm").status, CheckStatus::kWarn);
}

TEST_F(DoctorTest, MissingVirtiofsdFails) {
  probe_.virtiofsd = false;
  EXPECT_EQ(check("virtiofsd").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, GuestKernel) {
  // Nothing built: Debian's kernel on the first run, and how to get the faster one.
  EXPECT_EQ(check("guest kernel").status, CheckStatus::kWarn);
  EXPECT_NE(check("guest kernel").detail.find("first run builds"), std::string::npos);
  EXPECT_NE(check("guest kernel").fix.find("airlock system kernel build"), std::string::npos);
  probe_.missing.insert("apt-get");
  EXPECT_EQ(check("guest kernel").status, CheckStatus::kFail);
  touch(cache_ + "/assets/kernel-abc/vmlinux");
  EXPECT_EQ(check("guest kernel").status, CheckStatus::kWarn);
  EXPECT_NE(check("guest kernel").detail.find("Debian's cloud kernel and modules, cached"), std::string::npos);
  // airlock's own kernel built: ok, with its release.
  buildOwnKernel();
  EXPECT_EQ(check("guest kernel").status, CheckStatus::kOk);
  EXPECT_NE(check("guest kernel").detail.find("airlock's own 6.1.158-airlock"), std::string::npos)
      << check("guest kernel").detail;
}

TEST_F(DoctorTest, UserNamespacesDisabledFailsOnlyWhenNotRoot) {
  probe_.maxUserNamespaces = "0\n";
  EXPECT_EQ(check("user namespaces").status, CheckStatus::kOk);
  probe_.uid = 1000;
  EXPECT_EQ(check("user namespaces").status, CheckStatus::kFail);
  EXPECT_NE(check("user namespaces").fix.find("sysctl"), std::string::npos);
}

// Ubuntu 23.10+ restricts user namespaces through AppArmor even when the
// usual sysctls allow them.
TEST_F(DoctorTest, AppArmorUserNamespaceRestrictionFailsWithTheSysctlFix) {
  probe_.uid = 1000;
  probe_.user = "alice";
  probe_.files["/proc/sys/kernel/apparmor_restrict_unprivileged_userns"] = "1\n";
  EXPECT_EQ(check("user namespaces").status, CheckStatus::kFail);
  EXPECT_NE(check("user namespaces").detail.find("AppArmor"), std::string::npos);
  EXPECT_NE(check("user namespaces").fix.find("kernel.apparmor_restrict_unprivileged_userns=0"), std::string::npos);
  probe_.files["/proc/sys/kernel/apparmor_restrict_unprivileged_userns"] = "0\n";
  EXPECT_EQ(check("user namespaces").status, CheckStatus::kOk);
  probe_.uid = 0;
  probe_.files["/proc/sys/kernel/apparmor_restrict_unprivileged_userns"] = "1\n";
  EXPECT_EQ(check("user namespaces").status, CheckStatus::kOk) << "root needs no unprivileged user namespace";
}

TEST_F(DoctorTest, FullDiskFails) {
  probe_.free = 100ull << 20;
  EXPECT_EQ(check("disk (cache)").status, CheckStatus::kFail);
  EXPECT_EQ(check("disk (state)").status, CheckStatus::kFail);
}

TEST_F(DoctorTest, LowDiskWarns) {
  probe_.free = 3ull << 30;
  EXPECT_EQ(check("disk (cache)").status, CheckStatus::kWarn);
}

TEST_F(DoctorTest, EndedSessionWithSnapshotIsStale) {
  touch(state_ + "/sessions/20260101-000000-abcd/snapshot/file");
  touch(state_ + "/sessions/20260101-000000-ffff/session.log");
  auto r = check("stale sessions");
  EXPECT_EQ(r.status, CheckStatus::kWarn);
  EXPECT_NE(r.detail.find("1 ended session"), std::string::npos) << r.detail;
  // Never a glob removal that would also hit running sessions.
  EXPECT_NE(r.fix.find("airlock system prune --dry-run"), std::string::npos) << r.fix;
  EXPECT_EQ(r.fix.find("rm -rf"), std::string::npos) << "never a glob that also hits running sessions: " << r.fix;
}

// Running (its owner holds the run lock) or being reviewed: not stale.
TEST_F(DoctorTest, RunningSessionIsNotStale) {
  for (const char* held : {"session.lock", "review.lock"}) {
    touch(state_ + "/sessions/20260101-000000-abcd/snapshot/file");
    touch(state_ + "/sessions/20260101-000000-abcd/" + held);
    Fd lock(::open((state_ + "/sessions/20260101-000000-abcd/" + held).c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_EQ(flock(lock.get(), LOCK_EX), 0);
    EXPECT_EQ(check("stale sessions").status, CheckStatus::kOk) << held;
    lock.reset();
    EXPECT_EQ(check("stale sessions").status, CheckStatus::kWarn) << held;
  }
}

TEST_F(DoctorTest, InterruptedFlushJournalWarns) {
  touch(state_ + "/flush/0123456789abcdef", "/state/sessions/x");
  touch(state_ + "/flush/0123456789abcdef.lock");
  EXPECT_EQ(check("flush journals").status, CheckStatus::kWarn);
  Fd lock(::open((state_ + "/flush/0123456789abcdef.lock").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_EQ(flock(lock.get(), LOCK_EX), 0);
  EXPECT_EQ(check("flush journals").status, CheckStatus::kOk);
}

TEST_F(DoctorTest, RunDirectoriesEndedVmsLeftAreRemovedAndARunningOneKept) {
  // A reboot left one (its lock is free) with a scratch disk its session keeps.
  touch(state_ + "/vms/vm-ended/owner.lock");
  touch(state_ + "/vms/vm-ended/scratch.ext4", "disk");
  touch(state_ + "/vms/vm-ended/keep-scratch", state_ + "/sessions/s1/scratch.ext4\n");
  std::filesystem::create_directories(state_ + "/sessions/s1");
  touch(state_ + "/vms/vm-running/owner.lock");
  Fd lock(::open((state_ + "/vms/vm-running/owner.lock").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_EQ(flock(lock.get(), LOCK_EX), 0);
  auto r = check("VM run dirs");
  EXPECT_EQ(r.status, CheckStatus::kOk);
  EXPECT_NE(r.detail.find("removed 1 run directory"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("1 VM(s) running"), std::string::npos) << r.detail;
  EXPECT_FALSE(std::filesystem::exists(state_ + "/vms/vm-ended"));
  EXPECT_TRUE(std::filesystem::exists(state_ + "/vms/vm-running/owner.lock"));
  EXPECT_EQ(readFile(state_ + "/sessions/s1/scratch.ext4", 64).value_or(""), "disk") << "the kept disk reaches its session";
  EXPECT_NE(check("VM run dirs").detail.find("nothing left by ended VMs"), std::string::npos);
}

TEST_F(DoctorTest, LargeImageCacheWarns) {
  touch(cache_ + "/images/abc.erofs", std::string(4096, 'x'));
  DoctorLimits limits;
  EXPECT_EQ(check("image cache", limits).status, CheckStatus::kOk);
  limits.warnImageCacheBytes = 1024;
  EXPECT_EQ(check("image cache", limits).status, CheckStatus::kWarn);
}

TEST(ParseQemuVersion, ReadsTheVersion) {
  EXPECT_EQ(parseQemuVersion("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright"), "7.2.22");
  EXPECT_EQ(parseQemuVersion("QEMU emulator version 8.1\n"), "8.1");
  EXPECT_EQ(parseQemuVersion("something else"), "");
}

}  // namespace
}  // namespace airlock::preflight
