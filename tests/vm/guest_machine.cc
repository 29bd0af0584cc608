#include "guest_machine.h"

#include "vm_test_env.h"

namespace airlock::test {

protocol::ExecRequest shellRequest(const std::string& script) {
  protocol::ExecRequest r;
  r.argv = {"sh", "-c", script};
  r.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  return r;
}

Result<std::shared_ptr<vm::RemoteCommand>> startInGuest(vm::Machine& machine, const protocol::ExecRequest& request,
                                                        std::shared_ptr<GuestOutput> output) {
  vm::OutputHandlers handlers;
  handlers.onStdout = [output](std::string_view d) {
    std::lock_guard lock(output->mutex);
    output->out.append(d);
    output->all.append(d);
  };
  handlers.onStderr = [output](std::string_view d) {
    std::lock_guard lock(output->mutex);
    output->err.append(d);
    output->all.append(d);
  };
  return machine.vm().control().exec(request, handlers);
}

GuestResult runShell(vm::Machine& machine, const std::string& script) {
  auto output = std::make_shared<GuestOutput>();
  auto cmd = startInGuest(machine, shellRequest(script), output);
  if (!cmd) return {-1, cmd.error().message};
  auto status = (*cmd)->wait();
  if (!status) return {-1, status.error().message};
  return {status->shellCode(), output->allText()};
}

vm::LaunchOptions MachineFixture::launchOptions() {
  vm::LaunchOptions options;
  options.rootImage = testRootImage();
  configure(options);
  return options;
}

void MachineFixture::SetUp() {
  SKIP_WITHOUT_VMS();
  state_ = freshStateDir();
  host_ = testHost(state_, init_);
  auto machine = vm::Machine::launch(host_, launchOptions());
  ASSERT_TRUE(machine) << machine.error().message;
  machine_ = std::move(*machine);
}

void MachineFixture::TearDown() {
  if (machine_) machine_->stop();
  machine_.reset();
  if (!state_.empty()) {
    EXPECT_EQ(leftoverRunDirs(state_), "");
  }
}

}  // namespace airlock::test
