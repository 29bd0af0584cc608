#include "vm/vm_config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "vm/guest_contract.h"

namespace airlock::vm {
namespace {

bool hasPair(const std::vector<std::string>& args, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag && args[i + 1] == value) return true;
  return false;
}

bool contains(const std::vector<std::string>& args, const std::string& needle) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.find(needle) != std::string::npos; });
}

VmConfig sample() {
  VmConfig c;
  c.cpus = 2;
  c.memoryMiB = 768;
  c.kernel = "/k/vmlinux";
  c.initramfs = "/k/initramfs.cpio";
  c.disks = {{"/img/root.erofs", "root", true, "raw"}, {"/run/scratch.ext4", "scratch", false, "raw"}};
  c.shares = {{"workspace", "/home/u/p", "/workspace", true, "/run/fs0.sock"}};
  c.ports = {{"airlock.control", "/run/control.sock"}};
  c.qmpSocket = "/run/qmp.sock";
  c.consoleLog = "/run/console.log";
  return c;
}

TEST(QemuArgs, MicrovmWithMeasuredMachineFlags) {
  auto a = buildQemuArgs(sample());
  EXPECT_EQ(a[0], "qemu-system-x86_64");
  EXPECT_TRUE(hasPair(a, "-M", "microvm,pit=on,pic=on,rtc=on,acpi=on,memory-backend=mem"));
  EXPECT_TRUE(hasPair(a, "-global", "virtio-mmio.force-legacy=false"));
  EXPECT_TRUE(hasPair(a, "-object", "memory-backend-memfd,id=mem,size=768M,share=on"));
  EXPECT_TRUE(hasPair(a, "-smp", "2"));
  EXPECT_TRUE(hasPair(a, "-m", "768M"));
  EXPECT_TRUE(contains(a, "-no-reboot"));
}

TEST(QemuArgs, AcceleratorSelectsCpuModel) {
  auto c = sample();
  c.accel = Accel::kKvm;
  auto a = buildQemuArgs(c);
  EXPECT_TRUE(hasPair(a, "-accel", "kvm"));
  EXPECT_TRUE(hasPair(a, "-cpu", "host"));
  c.accel = Accel::kTcg;
  a = buildQemuArgs(c);
  EXPECT_TRUE(hasPair(a, "-cpu", "max"));
  // One host thread for all vCPUs: with one per vCPU, Node crashed at random (vm_config.h).
  EXPECT_TRUE(hasPair(a, "-accel", "tcg,tb-size=256,thread=single"));
}

TEST(QemuArgs, DisksSharesPortsAndQmp) {
  auto a = buildQemuArgs(sample());
  EXPECT_TRUE(contains(a, "file=/img/root.erofs,format=raw,if=none,readonly=on"));
  EXPECT_TRUE(contains(a, "file=/run/scratch.ext4,format=raw,if=none,readonly=off"));
  EXPECT_TRUE(contains(a, "virtio-blk-device,drive=disk0,serial=root"));
  EXPECT_TRUE(contains(a, "virtio-blk-device,drive=disk1,serial=scratch"));
  EXPECT_TRUE(contains(a, "socket,id=fs0,path=/run/fs0.sock"));
  EXPECT_TRUE(contains(a, "vhost-user-fs-device,chardev=fs0,tag=workspace"));
  EXPECT_TRUE(contains(a, "socket,id=port0,path=/run/control.sock,server=on,wait=off"));
  EXPECT_TRUE(contains(a, "virtserialport,chardev=port0,name=airlock.control"));
  EXPECT_TRUE(hasPair(a, "-qmp", "unix:/run/qmp.sock,server=on,wait=off"));
}

TEST(KernelCmdline, CarriesSharesTscAndNoSecrets) {
  auto c = sample();
  c.tscKhz = 2445424;
  std::string cmdline = kernelCmdline(c);
  EXPECT_NE(cmdline.find("airlock.share=workspace:/workspace:ro"), std::string::npos);
  EXPECT_NE(cmdline.find("tsc_early_khz=2445424"), std::string::npos);
  EXPECT_NE(cmdline.find("panic=-1"), std::string::npos);
  c.tscKhz = 0;
  EXPECT_EQ(kernelCmdline(c).find("tsc_early_khz"), std::string::npos);
}

TEST(KernelCmdline, NamesTheWorkspaceSnapshotDisk) {
  auto c = sample();
  EXPECT_EQ(kernelCmdline(c).find("airlock.workspace="), std::string::npos);
  c.shares.clear();
  c.disks.push_back({"/run/workspace.erofs", "workspace", true, "raw"});
  c.workspaceSerial = "workspace";
  EXPECT_NE(kernelCmdline(c).find(" airlock.workspace=workspace"), std::string::npos) << kernelCmdline(c);
  auto a = buildQemuArgs(c);
  EXPECT_TRUE(contains(a, "file=/run/workspace.erofs,format=raw,if=none,readonly=on"));
  EXPECT_FALSE(contains(a, "vhost-user-fs-device")) << "the snapshot went through a file server";
}

TEST(QemuArgs, SeccompSandboxDeniesSpawnAndPrivilegeRaising) {
  EXPECT_TRUE(hasPair(buildQemuArgs(sample()), "-sandbox",
                      "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"));
}

TEST(QemuArgs, NetworkIsNoneOrTheEgressTap) {
  auto c = sample();
  EXPECT_FALSE(contains(buildQemuArgs(c), "netdev"));
  EXPECT_EQ(kernelCmdline(c).find("airlock.net"), std::string::npos);
  c.tapFd = 7;
  auto a = buildQemuArgs(c);
  EXPECT_TRUE(hasPair(a, "-netdev", "tap,id=net0,fd=7"));
  EXPECT_TRUE(hasPair(a, "-device", "virtio-net-device,netdev=net0"));
  EXPECT_FALSE(contains(a, "user,id=net0"));
  EXPECT_NE(kernelCmdline(c).find("airlock.net=tap"), std::string::npos);
}

TEST(QemuArgs, TheSshAgentPortIsAPortOfItsOwnAndTheGuestIsTold) {
  auto c = sample();
  EXPECT_EQ(kernelCmdline(c).find("airlock.ssh_agent"), std::string::npos);
  c.servedPorts.push_back({guest::kSshAgentPort, [](int, const std::function<void(const std::string&)>&) {}});
  c.ports.push_back({guest::kSshAgentPort, "/run/x/airlock.ssh-agent.sock"});
  EXPECT_NE(kernelCmdline(c).find(" airlock.ssh_agent=1"), std::string::npos);
  EXPECT_TRUE(contains(buildQemuArgs(c), "virtserialport,chardev=port1,name=airlock.ssh-agent"));
}

}  // namespace
}  // namespace airlock::vm
