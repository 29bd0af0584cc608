#include "vm/vm_config.h"

#include <fmt/format.h>

#include "vm/guest_contract.h"
#include "vm/jail.h"

namespace airlock::vm {

std::string kernelCmdline(const VmConfig& c) {
  std::string cmdline = "console=ttyS0 quiet panic=-1 reboot=t rw";
  if (c.tscKhz) cmdline += fmt::format(" tsc_early_khz={}", c.tscKhz);
  for (const auto& share : c.shares)
    cmdline += fmt::format(" airlock.share={}:{}:{}", share.tag, share.guestPath, share.readOnly ? "ro" : "rw");
  if (!c.workspaceSerial.empty()) cmdline += fmt::format(" airlock.workspace={}", c.workspaceSerial);
  if (c.tapFd >= 0) cmdline += " airlock.net=tap";
  for (const auto& port : c.servedPorts)
    if (port.name == guest::kSshAgentPort) cmdline += " airlock.ssh_agent=1";
  if (!c.extraCmdline.empty()) cmdline += " " + c.extraCmdline;
  return cmdline;
}

std::vector<std::string> buildQemuArgs(const VmConfig& c) {
  std::vector<std::string> a = {c.qemuBinary};
  auto add = [&](std::initializer_list<std::string> items) { a.insert(a.end(), items); };
  add({"-M", "microvm,pit=on,pic=on,rtc=on,acpi=on,memory-backend=mem"});
  if (c.accel == Accel::kKvm)
    add({"-accel", "kvm", "-cpu", "host"});
  else
    add({"-accel", "tcg,tb-size=256,thread=single", "-cpu", "max"});
  add({"-smp", std::to_string(c.cpus), "-m", fmt::format("{}M", c.memoryMiB)});
  add({"-object", fmt::format("memory-backend-memfd,id=mem,size={}M,share=on", c.memoryMiB)});
  add({"-nodefaults", "-no-user-config", "-nographic", "-no-reboot"});
  add({"-sandbox", kQemuSandbox});
  add({"-global", "virtio-mmio.force-legacy=false"});
  if (!c.consoleSocket.empty())
    add({"-chardev", fmt::format("socket,id=console,path={},server=on,wait=on", c.consoleSocket), "-serial",
         "chardev:console"});
  else
    add({"-chardev", fmt::format("file,id=console,path={}", c.consoleLog.empty() ? "/dev/null" : c.consoleLog),
         "-serial", "chardev:console"});
  add({"-kernel", c.kernel, "-initrd", c.initramfs, "-append", kernelCmdline(c)});
  for (size_t i = 0; i < c.disks.size(); ++i) {
    const auto& d = c.disks[i];
    add({"-drive", fmt::format("id=disk{},file={},format={},if=none,readonly={},cache=unsafe,aio=threads", i,
                               d.path, d.format, d.readOnly ? "on" : "off"),
         "-device", fmt::format("virtio-blk-device,drive=disk{},serial={}", i, d.serial)});
  }
  for (size_t i = 0; i < c.shares.size(); ++i) {
    const auto& s = c.shares[i];
    add({"-chardev", fmt::format("socket,id=fs{},path={}", i, s.socketPath), "-device",
         fmt::format("vhost-user-fs-device,chardev=fs{},tag={}", i, s.tag)});
  }
  if (c.tapFd >= 0)
    add({"-netdev", fmt::format("tap,id=net0,fd={}", c.tapFd), "-device", "virtio-net-device,netdev=net0"});
  if (!c.ports.empty()) {
    add({"-device", "virtio-serial-device,max_ports=8"});
    for (size_t i = 0; i < c.ports.size(); ++i) {
      const auto& p = c.ports[i];
      add({"-chardev", fmt::format("socket,id=port{},path={},server=on,wait=off", i, p.socketPath), "-device",
           fmt::format("virtserialport,chardev=port{},name={}", i, p.name)});
    }
  }
  // Free page reporting: the guest hands back the pages it freed (in 2 MiB
  // blocks) and QEMU discards them, so an idle guest gives its memory back.
  add({"-device", "virtio-balloon-device,free-page-reporting=on"});
  if (!c.qmpSocket.empty()) add({"-qmp", fmt::format("unix:{},server=on,wait=off", c.qmpSocket)});
  return a;
}

}  // namespace airlock::vm
