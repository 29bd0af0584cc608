// `airlock run-image` driven as a user drives it: real VMs, real QEMU.

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "airlock_process.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

/// Waits (up to 120 s) until the file at `path` contains `text`.
bool waitForText(const std::string& path, const std::string& text) {
  for (int i = 0; i < 1200; ++i) {
    if (slurp(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

class RunImage : public testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_VMS();
    state_ = freshStateDir();
  }
  void TearDown() override {
    if (state_.empty()) return;
    EXPECT_EQ(leftoverRunDirs(state_), "") << "a VM run directory was left behind";
  }
  ProcessResult run(const std::vector<std::string>& command, const std::vector<std::string>& flags = {},
                    const std::string& input = "") {
    std::vector<std::string> args = {"run-image", "-q", "--rootfs", testRootfs()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return runAirlock(args, input, {{"XDG_STATE_HOME", state_}});
  }
  std::string state_;
};

// The cgroup QEMU runs in (vm/cgroup.h), made and used as QemuVm does, on
// a real cgroup v2 kernel with memory and pids: the guest's (this machine
// kind's host mounts cgroup v1, where airlock refuses and says why).
TEST_F(RunImage, AVmCgroupHoldsItsProcessToItsMemoryAndTaskLimits) {
  // The probe and its libraries in a directory shared read-only, run with
  // the host's dynamic loader.
  auto dir = TempDir::create("/tmp", "airlock-cgroup-probe-");
  ASSERT_TRUE(dir);
  ASSERT_EQ(chmod(dir->path().c_str(), 0755), 0);
  const std::string lib = dir->path() + "/lib";
  ASSERT_TRUE(makeDirs(lib));
  ASSERT_TRUE(runChecked({"cp", CGROUP_PROBE_BINARY, dir->path() + "/cgroup-probe"}));
  auto ldd = runChecked({"ldd", CGROUP_PROBE_BINARY});
  ASSERT_TRUE(ldd) << ldd.error().message;
  std::istringstream lines(*ldd);
  std::string loader;
  for (std::string line; std::getline(lines, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash, line.find(' ', slash) - slash);
    ASSERT_TRUE(runChecked({"cp", "-L", path, lib + "/"}));
    if (path.find("/ld-linux") != std::string::npos) loader = "/workspace/lib/" + path.substr(path.rfind('/') + 1);
  }
  ASSERT_FALSE(loader.empty()) << *ldd;
  auto r = run({loader, "--library-path", "/workspace/lib", "/workspace/cgroup-probe"}, {"-w", dir->path()});
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("path: /sys/fs/cgroup/airlock/vm-probe\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory.max: 50331648\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pids.max: 16\n"), std::string::npos) << r.out;
  // The guest kernel has no swap accounting: memory.swap.max may be absent.
  // A dead airlock's empty cgroup goes; a live one's, still empty, stays.
  EXPECT_NE(r.out.find("dead airlock's: removed\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("live airlock's: kept\n"), std::string::npos) << r.out;
  // The child joined the cgroup before it ran.
  EXPECT_NE(r.out.find("own: 0::/airlock/vm-probe\n"), std::string::npos) << r.out;
  // 96 MiB did not fit in 48: the kernel killed the allocation inside the cgroup.
  EXPECT_EQ(r.out.find("big: allocated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oom_kill 1\n"), std::string::npos) << r.out;
  // 40 background tasks did not fit in 16: forks were refused.
  auto at = r.out.find("pids.events: max ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GT(std::atoi(r.out.c_str() + at + 17), 0) << r.out;
  EXPECT_NE(r.out.find("removed: yes\n"), std::string::npos) << r.out;
}

TEST_F(RunImage, PrintsOutputAndPropagatesExitCode) {
  auto r = run({"sh", "-c", "echo hi; exit 3"});
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_EQ(r.out, "hi\n");
}

// localhost and the guest's own name resolve from /etc/hosts, which the
// guest writes at boot (Debian's base has none: `localhost` was a DNS query
// to the egress firewall, refused, and a dev server on localhost unreachable).
TEST_F(RunImage, LocalhostResolvesInTheGuestWithoutDns) {
  auto r = run({"sh", "-c", "cat /etc/hosts; hostname"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback airlock\n127.0.1.1\tairlock\nairlock\n");
}

TEST_F(RunImage, ExitCodesZeroOneAndFortyTwo) {
  for (int code : {0, 1, 42}) {
    auto r = run({"sh", "-c", "exit " + std::to_string(code)});
    EXPECT_EQ(r.exitCode, code) << r.err;
  }
}

TEST_F(RunImage, SignalledCommandExitsWith128PlusSignal) {
  auto r = run({"sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.exitCode, 128 + SIGKILL) << r.err;
  r = run({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.exitCode, 128 + SIGTERM) << r.err;
}

TEST_F(RunImage, StdoutAndStderrStaySeparate) {
  auto r = run({"sh", "-c", "echo to-out; echo to-err >&2; echo more-out"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out, "to-out\nmore-out\n");
  EXPECT_NE(r.err.find("to-err\n"), std::string::npos);
  EXPECT_EQ(r.err.find("out"), std::string::npos);
}

TEST_F(RunImage, TenMiBThroughStdinComeBackIntact) {
  std::string data(10u << 20, '\0');
  std::mt19937_64 rng(42);
  for (auto& c : data) c = static_cast<char>(rng());
  auto r = run({"cat"}, {}, data);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.size(), data.size());
  EXPECT_EQ(sha256Hex(r.out), sha256Hex(data));
}

TEST_F(RunImage, UnknownCommandExits127WithAClearMessage) {
  auto r = run({"no-such-command"});
  EXPECT_EQ(r.exitCode, 127);
  EXPECT_NE(r.err.find("cannot run 'no-such-command'"), std::string::npos) << r.err;
}

TEST_F(RunImage, PtyModeGivesATerminal) {
  auto r = run({"sh", "-c", "tty && stty size"}, {"--tty", "always"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("/dev/pts/"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("24 80"), std::string::npos) << "default window size when the host has none: " << r.out;
}

TEST_F(RunImage, PipeModeHasNoTerminal) {
  auto r = run({"tty"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.out.find("not a tty"), std::string::npos) << r.out;
}

TEST_F(RunImage, EnvValuesArriveIntactAndNeverOnAHostCommandLine) {
  const std::string secret = "s3cr3t value with spaces \"dq\" 'sq' =eq\nsecond line";
  // The value sits in the guest while we scan every host process's argv.
  std::string outPath = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--rootfs", testRootfs(), "-e", "AIRLOCK_TEST_SECRET=" + secret, "--",
                            "sh", "-c", "echo \"$AIRLOCK_TEST_SECRET\"; echo READY; sleep 3"},
                           outPath, {{"XDG_STATE_HOME", state_}, {"AIRLOCK_TEST_HOST_KEY", "s3cr3t-in-env"}});
  ASSERT_TRUE(waitForText(outPath, "READY")) << slurp(outPath);
  // airlock's own environment (API keys live there) never reaches a helper.
  for (const char* helper : {"qemu-system-x86_64", "virtiofsd"})
    for (pid_t p : processesNamed(helper, state_))
      EXPECT_EQ(slurp("/proc/" + std::to_string(p) + "/environ").find("s3cr3t"), std::string::npos)
          << "airlock's environment leaked into " << helper;
  // The -e flag itself carries the value on airlock's own command line (the
  // user typed it); what must never happen is a value on QEMU's, virtiofsd's
  // or any other process's command line.
  int seen = 0;
  for (pid_t p : processesNamed("qemu-system-x86_64", state_)) {
    std::string cmdline = slurp("/proc/" + std::to_string(p) + "/cmdline");
    ++seen;
    EXPECT_EQ(cmdline.find("s3cr3t"), std::string::npos) << "secret on QEMU's command line";
  }
  EXPECT_GE(seen, 1) << "the VM should be running while we look";
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(slurp(outPath).find(secret + "\nREADY"), std::string::npos) << slurp(outPath);
}

TEST_F(RunImage, EnvFromHostByName) {
  auto r = runAirlock({"run-image", "-q", "--rootfs", testRootfs(), "-e", "AIRLOCK_FROM_HOST", "--", "sh", "-c",
                       "echo \"$AIRLOCK_FROM_HOST\""},
                      "", {{"XDG_STATE_HOME", state_}, {"AIRLOCK_FROM_HOST", "forwarded=yes"}});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "forwarded=yes\n");
}

TEST_F(RunImage, ReadOnlyWorkspaceCannotBeWrittenEvenAfterRemount) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/file.txt") << "original\n"; }
  auto r = run({"sh", "-c",
                "cat /workspace/file.txt; "
                "echo x > /workspace/file.txt && echo WROTE; "
                "touch /workspace/new && echo CREATED; "
                "rm /workspace/file.txt && echo REMOVED; "
                "mount -o remount,rw /workspace; "
                "echo y > /workspace/file.txt && echo WROTE-AFTER-REMOUNT; "
                "echo done"},
               {"-w", ws});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("original\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("CREATED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REMOVED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done"), std::string::npos);
  EXPECT_EQ(slurp(ws + "/file.txt"), "original\n");
  EXPECT_NE(access((ws + "/new").c_str(), F_OK), 0);
}

// A read-only share is read-only all the way down: a filesystem mounted
// below the shared directory on the host (here a tmpfs) receives nothing
// either, even after the guest remounts /workspace read-write (issue 14).
TEST_F(RunImage, ReadOnlyShareIsReadOnlyBelowItsTopMountToo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: mounts a tmpfs below the shared directory";
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((ws + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(::mount("tmpfs", (ws + "/sub").c_str(), "tmpfs", 0, "mode=0777"), 0);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{ws + "/sub"};
  { std::ofstream(ws + "/sub/seen.txt") << "below\n"; }
  auto r = run({"sh", "-c",
                "cat /workspace/sub/seen.txt; mount -o remount,rw /workspace; mount -o remount,rw /workspace/sub; "
                "echo x > /workspace/sub/new && echo WROTE; mkdir /workspace/sub/d && echo MKDIR; "
                "cp /bin/busybox /workspace/sub/sh && chmod 4755 /workspace/sub/sh && echo SETUID; "
                "mknod /workspace/sub/disk b 8 0 && echo MKNOD; echo done"},
               {"-w", ws});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("below\n"), std::string::npos) << "the submount was not visible: " << r.out;
  for (const char* wrote : {"WROTE", "MKDIR", "SETUID", "MKNOD"}) EXPECT_EQ(r.out.find(wrote), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
  std::error_code ec;
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(ws + "/sub", ec)) ++entries;
  EXPECT_EQ(entries, 1u) << "the guest wrote below the read-only share";
}

TEST_F(RunImage, ReviewModeChangesLandOnlyThroughTheReviewGate) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/file.txt") << "original\n"; }
  { std::ofstream(ws + "/gone.txt") << "delete me\n"; }
  { std::ofstream(ws + "/.env") << "TOKEN=never-in-the-vm\n"; }
  const std::vector<std::string> edit = {"sh", "-c",
                                         "test -e /workspace/.env && echo SECRET-VISIBLE; "
                                         "echo changed > /workspace/file.txt; echo new > /workspace/new.txt; "
                                         "rm /workspace/gone.txt; exit 5"};
  auto pending = run(edit, {"-w", ws, "--review=none"});
  EXPECT_EQ(pending.exitCode, 5) << pending.err;  // the command's failure wins over "pending"
  EXPECT_EQ(pending.out.find("SECRET-VISIBLE"), std::string::npos) << pending.out;
  EXPECT_EQ(slurp(ws + "/file.txt"), "original\n") << "--review=none changed the workspace";
  EXPECT_EQ(access((ws + "/new.txt").c_str(), F_OK), -1);
  EXPECT_EQ(slurp(ws + "/gone.txt"), "delete me\n");

  auto accepted = run({"sh", "-c", "echo changed > /workspace/file.txt; echo new > /workspace/new.txt; "
                                   "rm /workspace/gone.txt"},
                      {"-w", ws, "--review=auto"});
  EXPECT_EQ(accepted.exitCode, 0) << accepted.err;
  EXPECT_EQ(slurp(ws + "/file.txt"), "changed\n");
  EXPECT_EQ(slurp(ws + "/new.txt"), "new\n");
  EXPECT_EQ(access((ws + "/gone.txt").c_str(), F_OK), -1);
  EXPECT_EQ(slurp(ws + "/.env"), "TOKEN=never-in-the-vm\n");
}

// Item 21: --review=auto does not flush the work of a command that failed: it
// stays pending, the last line names the command that resumes it, and
// --accept-failed flushes it anyway.
TEST_F(RunImage, AutoReviewKeepsTheWorkOfAFailedCommandPending) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/file.txt") << "original\n"; }
  const std::vector<std::string> edit = {"sh", "-c", "echo half-done > /workspace/file.txt; exit 3"};
  auto failed = run(edit, {"-w", ws, "--review=auto"});
  EXPECT_EQ(failed.exitCode, 3) << failed.err;
  EXPECT_EQ(slurp(ws + "/file.txt"), "original\n") << "the failed command's work was flushed";
  EXPECT_NE(failed.err.find("the command exited with 3"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("--accept-failed"), std::string::npos) << failed.err;
  // The hint names the session by its name (run-image-XXXXXX).
  const std::string resume = "1 change pending; review it with: airlock review ";
  auto hint = failed.err.rfind(resume);
  ASSERT_NE(hint, std::string::npos) << failed.err;
  std::string name = failed.err.substr(hint + resume.size());
  name = name.substr(0, name.find('\n'));
  EXPECT_TRUE(name.starts_with("run-image-")) << name;
  auto resumed = runAirlock({"review", name, "--review=all"}, "", {{"XDG_STATE_HOME", state_}});
  EXPECT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_EQ(slurp(ws + "/file.txt"), "half-done\n");

  auto accepted = run({"sh", "-c", "echo accepted > /workspace/file.txt; exit 3"},
                      {"-w", ws, "--review=auto", "--accept-failed"});
  EXPECT_EQ(accepted.exitCode, 3) << accepted.err;
  EXPECT_EQ(slurp(ws + "/file.txt"), "accepted\n");
}

// Issue 14 item 4: run by root (sudo) on a user's project, the agent's new
// and edited files used to land owned by root. They belong to the workspace's
// owner now, with the mode the user's umask gives.
TEST_F(RunImage, AsRootFlushedFilesBelongToTheWorkspaceOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the workspace belongs to another user";
  std::string ws = state_ + "/owned-ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/file.txt") << "original\n"; }
  ASSERT_EQ(::chown(ws.c_str(), 1001, 1001), 0);
  ASSERT_EQ(::chown((ws + "/file.txt").c_str(), 1001, 1001), 0);
  auto r = run({"sh", "-c", "echo changed > /workspace/file.txt; mkdir -p /workspace/src/lib; "
                            "echo new > /workspace/src/lib/b.c; ln -s b.c /workspace/src/lib/link"},
               {"-w", ws, "--review=auto"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(slurp(ws + "/src/lib/b.c"), "new\n");
  for (const char* path : {"file.txt", "src", "src/lib", "src/lib/b.c", "src/lib/link"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((ws + "/" + path).c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, 1001u) << path;
    EXPECT_EQ(st.st_gid, 1001u) << path;
  }
  struct stat st {};
  ASSERT_EQ(::stat((ws + "/src/lib/b.c").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(RunImage, ReviewWithoutWorkspaceIsAUsageError) {
  auto r = run({"true"}, {"--review=auto"});
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_NE(r.err.find("-w DIR"), std::string::npos) << r.err;
}

TEST_F(RunImage, PublishedGuestPortIsReachableOnlyAtTheHostsLoopbackPort) {
  uint16_t port = freeLoopbackPort();
  std::string outPath = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--rootfs", testRootfs(), "--publish", std::to_string(port) + ":8000",
                            "--", "sh", "-c", "echo READY; echo published-hello | nc -l -p 8000"},
                           outPath, {{"XDG_STATE_HOME", state_}});
  ASSERT_TRUE(waitForText(outPath, "READY")) << slurp(outPath);
  std::string got;
  for (int i = 0; i < 100 && got.empty(); ++i) {
    got = readFromTcp("127.0.0.1", port);
    if (got.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(got, "published-hello\n");
  EXPECT_EQ(readFromTcp("127.0.0.2", port), "") << "the published port listens beyond 127.0.0.1";
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << slurp(outPath);
  EXPECT_EQ(readFromTcp("127.0.0.1", port), "") << "the published port outlived the session";
}

TEST_F(RunImage, PublishingATakenPortIsAUsageError) {
  Fd taken(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(taken.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(taken.get(), 1), 0);
  getsockname(taken.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/file.txt") << "original\n"; }
  auto r = run({"true"}, {"-w", ws, "--review=auto", "--publish", std::to_string(ntohs(addr.sin_port)) + ":80"});
  EXPECT_EQ(r.exitCode, 64) << r.err;
  EXPECT_NE(r.err.find("pick another host port"), std::string::npos) << r.err;
  // The session's snapshot of the workspace did not outlive the failed start.
  auto left = runCommand({"find", state_ + "/airlock/sessions", "-name", "snapshot"});
  ASSERT_TRUE(left);
  EXPECT_EQ(left->stdoutText, "") << "a snapshot was left behind";
}

TEST_F(RunImage, ThreeVmsAtOnce) {
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i)
    pids.push_back(startAirlock({"run-image", "-q", "--rootfs", testRootfs(), "--", "sh", "-c",
                                 "echo vm-" + std::to_string(i) + "; exit " + std::to_string(10 + i)},
                                state_ + "/out" + std::to_string(i), {{"XDG_STATE_HOME", state_}}));
  for (int i = 0; i < 3; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 10 + i) << slurp(state_ + "/out" + std::to_string(i));
    EXPECT_NE(slurp(state_ + "/out" + std::to_string(i)).find("vm-" + std::to_string(i)), std::string::npos);
  }
}

// Issue 17 item 2: two sessions on one workspace, each on its own snapshot.
// B starts first and waits on its stdin; A edits a.txt and shared.txt and
// flushes; then B ends: its b.txt lands, its shared.txt (which A's flush
// changed after B's snapshot) is a conflict, and A's content stays.
TEST_F(RunImage, TwoSessionsOnOneWorkspaceFlushInTurnAndASharedFileIsAConflict) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/shared.txt") << "original\n"; }
  int input[2];
  ASSERT_EQ(pipe2(input, O_CLOEXEC), 0);
  const std::string outB = state_ + "/outB";
  pid_t b = startAirlock({"run-image", "-q", "--rootfs", testRootfs(), "-w", ws, "--review=auto", "--", "sh", "-c",
                          "echo B > /workspace/b.txt; echo B > /workspace/shared.txt; echo B-READY; cat >/dev/null"},
                         outB, {{"XDG_STATE_HOME", state_}}, input[0]);
  ::close(input[0]);
  ASSERT_TRUE(waitForText(outB, "B-READY")) << slurp(outB);
  auto a = run({"sh", "-c", "echo A > /workspace/a.txt; echo A > /workspace/shared.txt"}, {"-w", ws, "--review=auto"});
  EXPECT_EQ(a.exitCode, 0) << a.err;
  EXPECT_EQ(slurp(ws + "/a.txt"), "A\n");
  EXPECT_EQ(slurp(ws + "/shared.txt"), "A\n");
  ::close(input[1]);
  int status = 0;
  ASSERT_EQ(waitpid(b, &status, 0), b);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 71) << status << "\n" << slurp(outB);
  EXPECT_EQ(slurp(ws + "/b.txt"), "B\n") << slurp(outB);
  EXPECT_EQ(slurp(ws + "/shared.txt"), "A\n") << "the second session overwrote the first one's flush";
  EXPECT_NE(slurp(outB).find("shared.txt"), std::string::npos) << slurp(outB);
}

TEST_F(RunImage, GuestKernelPanicIsAClearErrorAndLeavesNothing) {
  auto r = run({"sh", "-c", "echo c > /proc/sysrq-trigger; sleep 60"});
  EXPECT_EQ(r.exitCode, 66) << r.err;
  EXPECT_NE(r.err.find("Kernel panic"), std::string::npos) << r.err;
  EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty());
}

TEST_F(RunImage, QemuCrashIsAClearErrorAndLeavesNothing) {
  std::string outPath = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--rootfs", testRootfs(), "--", "sh", "-c", "echo READY; sleep 60"},
                           outPath, {{"XDG_STATE_HOME", state_}});
  ASSERT_TRUE(waitForText(outPath, "READY")) << slurp(outPath);
  for (pid_t q : processesNamed("qemu-system-x86_64", state_)) kill(q, SIGKILL);
  int status = 0;
  auto start = std::chrono::steady_clock::now();
  waitpid(pid, &status, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "airlock hung after QEMU died";
  EXPECT_EQ(WEXITSTATUS(status), 66) << slurp(outPath);
  EXPECT_NE(slurp(outPath).find("VM"), std::string::npos) << slurp(outPath);
}

TEST_F(RunImage, SigkillDuringAReviewSessionLeavesNoSnapshot) {
  std::string ws = state_ + "/ws";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/file.txt") << "original\n"; }
  std::string outPath = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--rootfs", testRootfs(), "-w", ws, "--review=auto", "--", "sh", "-c",
                            "echo READY; sleep 120"},
                           outPath, {{"XDG_STATE_HOME", state_}});
  ASSERT_TRUE(waitForText(outPath, "READY")) << slurp(outPath);
  auto snapshots = [&] {
    auto found = runCommand({"find", state_ + "/airlock/sessions", "-maxdepth", "2", "-name", "snapshot"});
    return found ? found->stdoutText : std::string("find failed");
  };
  ASSERT_NE(snapshots(), "") << "the session has no snapshot to lose";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = snapshots().empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the snapshot outlived airlock: " << snapshots();
  EXPECT_EQ(slurp(ws + "/file.txt"), "original\n");
}

TEST_F(RunImage, SigkillOfAirlockLeavesNoVmNoTempDir) {
  std::string outPath = state_ + "/out.txt";
  pid_t pid = startAirlock({"run-image", "-q", "--rootfs", testRootfs(), "-w", state_, "--", "sh", "-c",
                            "echo READY; sleep 120"},
                           outPath, {{"XDG_STATE_HOME", state_}});
  ASSERT_TRUE(waitForText(outPath, "READY")) << slurp(outPath);
  ASSERT_FALSE(processesNamed("qemu-system-x86_64", state_).empty());
  ASSERT_NE(leftoverRunDirs(state_), "");
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  bool clean = false;
  for (int i = 0; i < 50 && !clean; ++i) {
    clean = processesNamed("qemu-system-x86_64", state_).empty() && processesNamed("virtiofsd", state_).empty() &&
            leftoverRunDirs(state_).empty();
    if (!clean) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(clean) << "after 5 s: qemu " << processesNamed("qemu-system-x86_64", state_).size()
                     << ", virtiofsd " << processesNamed("virtiofsd", state_).size() << ", run dirs '"
                     << leftoverRunDirs(state_) << "'";
  EXPECT_EQ(slurp("/proc/mounts").find(state_), std::string::npos) << "a mount was left behind";
}

TEST_F(RunImage, UnknownOptionIsAUsageErrorNotAGuestCommand) {
  auto r = runAirlock({"run-image", "--rootfs", testRootfs(), "--cpu", "2", "--", "echo", "hi"}, "",
                      {{"XDG_STATE_HOME", state_}});
  EXPECT_EQ(r.exitCode, 64) << r.err;
  EXPECT_NE(r.err.find("--cpu"), std::string::npos) << r.err;
  EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty());
}

TEST_F(RunImage, BadFlagsAreUsageErrors) {
  auto r = runAirlock({"run-image", "--rootfs", testRootfs(), "--cpus", "0", "--", "true"}, "",
                      {{"XDG_STATE_HOME", state_}});
  EXPECT_EQ(r.exitCode, 64);
  // One line, like every airlock error, pointing at the verb's help.
  EXPECT_EQ(r.err.rfind("airlock run-image: --cpus", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("airlock run-image --help"), std::string::npos) << r.err;
  r = runAirlock({"run-image", "--rootfs", "/nonexistent-rootfs", "--", "true"}, "", {{"XDG_STATE_HOME", state_}});
  EXPECT_EQ(r.exitCode, 67) << r.err;
  EXPECT_NE(r.err.find("/nonexistent-rootfs"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace airlock::test
