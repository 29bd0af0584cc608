// Detached sessions (issue 17) driven as a user drives them: `run-image -d`,
// `ls`, `logs`, `attach` in a real pty, `stop`, `review NAME`, `rm`, with
// real VMs and no daemon.

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "airlock_process.h"
#include "common/fd.h"
#include "session/attach_frames.h"
#include "session/supervisor.h"
#include "vm_test_env.h"

namespace airlock::test {
namespace {

class Detached : public testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_VMS();
    state_ = freshStateDir();
    ws_ = state_ + "/ws";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    { std::ofstream(ws_ + "/shared.txt") << "original\n"; }
  }
  void TearDown() override {
    if (state_.empty()) return;
    // Whatever a test left running is stopped; no VM outlives its session.
    for (const auto& line : lines(airlock({"ls", "-q"}).out)) airlock({"stop", "-t", "0", line});
    EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty()) << "a VM outlived its session";
    EXPECT_EQ(leftoverRunDirs(state_), "") << "a VM run directory was left behind";
  }
  ProcessResult airlock(const std::vector<std::string>& args, const std::string& input = "") {
    return runAirlock(args, input, {{"XDG_STATE_HOME", state_}});
  }
  /// `run-image -d` of `script` (sh -c) on the workspace, with `flags`; returns the result.
  ProcessResult detach(const std::string& name, const std::string& script,
                       const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {"run-image", "-d", "-q", "--rootfs", testRootfs(), "-w", ws_};
    args.insert(args.end(), flags.begin(), flags.end());
    if (!name.empty()) args.insert(args.end(), {"--name", name});
    args.insert(args.end(), {"--", "sh", "-c", script});
    return airlock(args);
  }
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0, eol;
    while ((eol = text.find('\n', start)) != std::string::npos) {
      if (eol > start) out.push_back(text.substr(start, eol - start));
      start = eol + 1;
    }
    return out;
  }
  /// The `ls --all --json` entry of `name` (null when absent).
  nlohmann::json entry(const std::string& name) {
    auto ls = airlock({"ls", "--all", "--json"});
    auto all = nlohmann::json::parse(ls.out, nullptr, false);
    if (all.is_array())
      for (const auto& e : all)
        if (e.value("name", "") == name) return e;
    return nullptr;
  }
  /// Waits (up to 120 s) until `name`'s state is `state`.
  bool waitForState(const std::string& name, const std::string& state) {
    for (int i = 0; i < 600; ++i) {
      auto e = entry(name);
      if (!e.is_null() && e.value("state", "") == state) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
  std::string state_, ws_;
};

// The whole life of one detached session: it starts and the command returns
// at once with its name; `ls` shows it running with the host memory its
// processes use; `logs` has its output; `stop` ends it with SIGTERM and its
// changes wait; `review NAME` flushes them; `rm` removes it.
TEST_F(Detached, RunStopReviewAndRemoveByName) {
  auto started = detach("job-1", "echo changed > /workspace/shared.txt; echo hello-from-the-guest; "
                                  "trap 'echo got-term; exit 3' TERM; while true; do sleep 1; done");
  ASSERT_EQ(started.exitCode, 0) << started.err;
  EXPECT_EQ(started.out, "job-1\n");
  auto running = entry("job-1");
  ASSERT_FALSE(running.is_null()) << airlock({"ls", "--all"}).out;
  EXPECT_EQ(running["state"], "running");
  EXPECT_EQ(running["agent"], "run-image");
  EXPECT_EQ(running["workspace"], ws_);
  EXPECT_GT(running["host_memory_bytes"].get<uint64_t>(), uint64_t{16} << 20) << running.dump();
  for (int i = 0; i < 100 && airlock({"logs", "job-1"}).out.find("hello-from-the-guest") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_NE(airlock({"logs", "job-1"}).out.find("hello-from-the-guest"), std::string::npos);
  EXPECT_EQ(slurp(ws_ + "/shared.txt"), "original\n") << "a detached session wrote the workspace";

  auto busyReview = airlock({"review", "job-1", "--review=auto"});
  EXPECT_EQ(busyReview.exitCode, 73) << busyReview.err;
  auto busyRm = airlock({"rm", "job-1"});
  EXPECT_EQ(busyRm.exitCode, 73) << busyRm.err;
  auto taken = detach("job-1", "true");
  EXPECT_EQ(taken.exitCode, 64) << taken.err;
  EXPECT_NE(taken.err.find("is taken"), std::string::npos) << taken.err;

  auto stopped = airlock({"stop", "job-1"});
  EXPECT_EQ(stopped.exitCode, 0) << stopped.err;
  auto ended = entry("job-1");
  EXPECT_EQ(ended["state"], "pending review") << ended.dump();
  EXPECT_EQ(ended["exit_code"], 3) << ended.dump();
  EXPECT_NE(airlock({"logs", "job-1"}).out.find("got-term"), std::string::npos);
  EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty()) << "stop left the VM running";
  EXPECT_FALSE(std::filesystem::exists(ended["dir"].get<std::string>() + "/root.img"))
      << "the exported session still holds its image";

  auto kept = airlock({"rm", "job-1"});
  EXPECT_EQ(kept.exitCode, 64) << "rm discarded unreviewed changes without --force";
  auto reviewed = airlock({"review", "job-1", "--review=auto"});
  EXPECT_EQ(reviewed.exitCode, 0) << reviewed.err;
  EXPECT_EQ(slurp(ws_ + "/shared.txt"), "changed\n");
  EXPECT_EQ(entry("job-1")["state"], "exited (3)");
  EXPECT_EQ(airlock({"ls", "-q"}).out, "") << "an ended, reviewed session is listed without --all";
  auto removed = airlock({"rm", "job-1"});
  EXPECT_EQ(removed.exitCode, 0) << removed.err;
  EXPECT_TRUE(entry("job-1").is_null());
  auto again = detach("job-1", "true");
  EXPECT_EQ(again.exitCode, 0) << "the name of a removed session is free: " << again.err;
  EXPECT_TRUE(waitForState("job-1", "exited (0)")) << "a session that changed nothing waits for a review: "
                                                   << entry("job-1").dump();
}

/// Reads from `fd` until `text` appears or 60 s pass; returns what was read.
std::string readUntil(int fd, const std::string& text) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buf[4096];
  while (got.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

/// `airlock attach NAME` on a new pty (a real terminal: raw mode, window
/// size). Returns its pid; `master` is the terminal's other end.
pid_t attachInPty(const std::string& state, const std::string& name, int& master) {
  winsize size{30, 100, 0, 0};
  const std::string bin = airlockBinary();
  pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  if (pid == 0) {
    setenv("XDG_STATE_HOME", state.c_str(), 1);
    execl(bin.c_str(), bin.c_str(), "attach", name.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

// `attach` in a real pty: keystrokes reach the agent's terminal and its
// output comes back, the window size is the attaching terminal's, Ctrl-P
// Ctrl-Q detaches and leaves it running, and a second attach ends with the
// command's exit code.
TEST_F(Detached, AttachInAPtyTypesDetachesAndEndsWithTheCommandsCode) {
  auto started = detach("tty", "while read line; do echo \"got: $line ($(stty size))\"; "
                               "[ \"$line\" = quit ] && exit 7; done");
  ASSERT_EQ(started.exitCode, 0) << started.err;
  int master = -1;
  pid_t pid = attachInPty(state_, "tty", master);
  ASSERT_GT(pid, 0);
  ASSERT_NE(readUntil(master, "Ctrl-P Ctrl-Q detaches").find("attached to tty"), std::string::npos);
  ASSERT_EQ(write(master, "hello\r", 6), 6);
  std::string echoed = readUntil(master, "got: hello");
  EXPECT_NE(echoed.find("got: hello (30 100)"), std::string::npos) << echoed;
  ASSERT_EQ(write(master, "\x10\x11", 2), 2);
  std::string left = readUntil(master, "detached from tty");
  EXPECT_NE(left.find("detached from tty"), std::string::npos) << left;
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  close(master);
  EXPECT_EQ(entry("tty")["state"], "running") << "detaching ended the session";

  pid = attachInPty(state_, "tty", master);
  readUntil(master, "Ctrl-P Ctrl-Q detaches");
  ASSERT_EQ(write(master, "quit\r", 5), 5);
  std::string end = readUntil(master, "exited with 7");
  EXPECT_NE(end.find("exited with 7"), std::string::npos) << end;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << status;
  close(master);
  EXPECT_TRUE(waitForState("tty", "exited (7)")) << entry("tty").dump();
}

// Issue 17 item 2 with detached sessions: both edit shared.txt and a file
// of their own; the first review flushes, the second finds shared.txt
// changed since its snapshot (a conflict, kept) and flushes the rest.
TEST_F(Detached, TwoSessionsOnOneWorkspaceReviewedInTurn) {
  ASSERT_EQ(detach("one", "echo one > /workspace/one.txt; echo one > /workspace/shared.txt").exitCode, 0);
  ASSERT_EQ(detach("two", "echo two > /workspace/two.txt; echo two > /workspace/shared.txt").exitCode, 0);
  ASSERT_TRUE(waitForState("one", "pending review")) << entry("one").dump();
  ASSERT_TRUE(waitForState("two", "pending review")) << entry("two").dump();
  auto first = airlock({"review", "one", "--review=auto"});
  EXPECT_EQ(first.exitCode, 0) << first.err;
  auto second = airlock({"review", "two", "--review=auto"});
  EXPECT_EQ(second.exitCode, 71) << second.out << second.err;
  EXPECT_EQ(slurp(ws_ + "/one.txt"), "one\n");
  EXPECT_EQ(slurp(ws_ + "/two.txt"), "two\n");
  EXPECT_EQ(slurp(ws_ + "/shared.txt"), "one\n") << "the second review overwrote the first one's flush";
  EXPECT_EQ(entry("two")["state"], "pending review") << "the conflict was not kept";
}

// `exec` runs beside the agent in the same VM, on the same snapshot: it sees
// what the agent wrote, keeps stdout and stderr apart, takes stdin with -i,
// exits with its command's code, and what it writes is part of the
// session's changes.
TEST_F(Detached, ExecRunsBesideTheAgentOnTheSameSnapshot) {
  ASSERT_EQ(detach("ex", "echo from-agent > /workspace/agent.txt; sleep 600").exitCode, 0);
  ProcessResult seen;
  for (int i = 0; i < 50; ++i) {
    seen = airlock({"exec", "ex", "--", "sh", "-c", "cat /workspace/agent.txt; echo to-stderr >&2; exit 5"});
    if (seen.out == "from-agent\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(seen.exitCode, 5) << seen.err;
  EXPECT_EQ(seen.out, "from-agent\n");
  EXPECT_EQ(seen.err, "to-stderr\n");
  auto piped = runAirlock({"exec", "-i", "ex", "--", "sh", "-c", "cat > /workspace/piped.txt; id -u"}, "through stdin\n",
                          {{"XDG_STATE_HOME", state_}});
  EXPECT_EQ(piped.exitCode, 0) << piped.err;
  EXPECT_EQ(piped.out, "0\n") << "exec runs as the agent's user (run-image's default: 0)";
  auto missing = airlock({"exec", "ex", "--", "no-such-command"});
  EXPECT_EQ(missing.exitCode, 127) << missing.err;
  EXPECT_EQ(airlock({"exec", "nobody", "--", "true"}).exitCode, 64);
  ASSERT_EQ(airlock({"stop", "-t", "0", "ex"}).exitCode, 0);
  EXPECT_EQ(airlock({"exec", "ex", "--", "true"}).exitCode, 64) << "exec into a stopped session";
  auto reviewed = airlock({"review", "ex", "--review=auto"});
  EXPECT_EQ(reviewed.exitCode, 0) << reviewed.err;
  EXPECT_EQ(slurp(ws_ + "/piped.txt"), "through stdin\n");
  EXPECT_EQ(slurp(ws_ + "/agent.txt"), "from-agent\n");
}

// `diff` shows a running session's changes so far as the review will (the
// three-way diff, with a host edit made since the snapshot as a conflict),
// while the agent keeps writing: the export is taken with the guest's
// writes held (a file rewritten all the time never changes under it, which
// failed the export before), every diff of a file being appended is a
// whole one, the agent goes on afterwards (the guest's freeze was lifted),
// nothing reaches the workspace and no exported file is left. After the
// session ended, `diff` shows what waits for review.
TEST_F(Detached, DiffShowsTheChangesSoFarWhileTheAgentRuns) {
  { std::ofstream(ws_ + "/host.txt") << "base\n"; }
  ASSERT_EQ(detach("live", "echo agent > /workspace/host.txt; echo first > /workspace/first.txt; "
                           "head -c 1000000 /dev/zero | tr '\\0' r > /tmp/big; "
                           "while true; do cp /tmp/big /workspace/rewritten.txt; done & "
                           "i=0; while true; do i=$((i+1)); echo line-$i >> /workspace/growing.txt; done")
                .exitCode, 0);
  { std::ofstream(ws_ + "/host.txt") << "edited on the host\n"; }
  nlohmann::json first;
  for (int i = 0; i < 100; ++i) {
    auto d = airlock({"diff", "live", "--json"});
    ASSERT_EQ(d.exitCode, 0) << d.err;
    first = nlohmann::json::parse(d.out, nullptr, false);
    if (first.is_object() && first["items"].size() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(first["running"], true);
  std::map<std::string, nlohmann::json> byPath;
  for (const auto& item : first["items"]) byPath[item["path"]] = item;
  EXPECT_EQ(byPath["first.txt"].value("kind", ""), "added") << first.dump();
  EXPECT_EQ(byPath["host.txt"].value("conflict", false), true) << "a host edit since the snapshot is a conflict";
  EXPECT_EQ(byPath["growing.txt"].value("kind", ""), "added") << first.dump();

  uint64_t lastLines = 0;
  for (int i = 0; i < 5; ++i) {
    auto d = airlock({"diff", "live", "--color=never"});
    ASSERT_EQ(d.exitCode, 0) << d.err;
    EXPECT_NE(d.out.find("+first"), std::string::npos) << d.out.substr(0, 2000);
    // The growing file: line-1 .. line-N, each line whole, none missing.
    size_t at = d.out.find("b/growing.txt");
    ASSERT_NE(at, std::string::npos);
    uint64_t n = 0;
    for (size_t p = d.out.find("+line-", at); p != std::string::npos; p = d.out.find("+line-", p + 1)) {
      size_t eol = d.out.find('\n', p);
      ASSERT_EQ(d.out.substr(p, eol - p), "+line-" + std::to_string(++n)) << "a torn export";
    }
    EXPECT_GE(n, lastLines) << "the agent's file shrank between two diffs";
    lastLines = n;
  }
  EXPECT_GT(lastLines, 0u);
  auto stat = airlock({"diff", "live", "--stat"});
  EXPECT_EQ(stat.exitCode, 0) << stat.err;
  EXPECT_NE(stat.out.find("growing.txt"), std::string::npos) << stat.out;
  EXPECT_EQ(stat.out.find("@@"), std::string::npos) << "--stat printed patches";
  // The agent was not held: its file goes on growing after the diffs.
  auto count = [&] {
    auto e = airlock({"exec", "live", "--", "sh", "-c", "wc -l < /workspace/growing.txt"});
    return std::stoull(e.out.empty() ? "0" : e.out);
  };
  uint64_t before = count();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_GT(count(), before) << "the agent stopped writing after a diff";
  EXPECT_EQ(slurp(ws_ + "/host.txt"), "edited on the host\n");
  EXPECT_FALSE(std::ifstream(ws_ + "/first.txt").good()) << "diff flushed";

  ASSERT_EQ(airlock({"stop", "-t", "0", "live"}).exitCode, 0);
  auto after = airlock({"diff", "live", "--stat"});
  EXPECT_EQ(after.exitCode, 0) << after.err;
  EXPECT_NE(after.out.find("first.txt"), std::string::npos) << after.out;
  auto dir = entry("live").value("dir", "");
  ASSERT_FALSE(dir.empty()) << entry("live").dump();
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename();
    EXPECT_FALSE(name.starts_with("diff-") || name.starts_with("preview-")) << name << " left in the session";
  }
  EXPECT_EQ(airlock({"diff", "nobody"}).exitCode, 64);
}

// Once the agent is done writing, `diff` while it runs lists exactly what the
// review after `stop` lists.
TEST_F(Detached, DiffWhileRunningEqualsTheReviewsList) {
  ASSERT_EQ(detach("same", "mkdir -p /workspace/dir; echo a > /workspace/dir/a; ln -s dir/a /workspace/link; "
                           "rm /workspace/shared.txt; chmod 0755 /workspace/dir/a; echo written; sleep 600")
                .exitCode, 0);
  for (int i = 0; i < 300 && airlock({"logs", "same"}).out.find("written") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto list = [](const std::string& json) {
    std::vector<std::string> out;
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_object())
      for (const auto& item : j["items"]) out.push_back(item.value("path", "") + " " + item.value("kind", ""));
    return out;
  };
  auto live = airlock({"diff", "same", "--json"});
  ASSERT_EQ(live.exitCode, 0) << live.err;
  ASSERT_EQ(airlock({"stop", "-t", "0", "same"}).exitCode, 0);
  auto reviewed = airlock({"review", "same", "--review=none", "--json"});
  EXPECT_EQ(reviewed.exitCode, 70) << reviewed.err;
  EXPECT_EQ(list(live.out), list(reviewed.out));
  EXPECT_EQ(list(live.out).size(), 4u) << live.out;
}

// `diff` asked again and again while the session ends: each one answers
// (the changes so far, or once it has ended what waits for review), never
// "not running" in between.
TEST_F(Detached, DiffWhileTheSessionEndsAlwaysAnswers) {
  ASSERT_EQ(detach("ending", "echo x > /workspace/x.txt; sleep 3").exitCode, 0);
  int asked = 0;
  bool ended = false;
  for (; asked < 200 && !ended; ++asked) {
    auto d = airlock({"diff", "ending", "--stat"});
    ASSERT_EQ(d.exitCode, 0) << "diff number " << asked << ": " << d.err;
    if (d.out.find("x.txt") == std::string::npos) continue;  // before the agent wrote it
    ended = d.err.find("still running") == std::string::npos;
  }
  EXPECT_TRUE(ended) << asked << " diffs";
}

/// Reads attach frames from `fd` until kExit (or 180 s): the kOutput
/// payloads joined, then "exit=CODE".
std::string readFrames(int fd) {
  session::AttachFrameReader reader;
  std::string out;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (std::chrono::steady_clock::now() < deadline) {
    auto frame = reader.next();
    if (!frame) return out + "bad frame";
    if (*frame) {
      if ((*frame)->type == session::AttachFrameType::kOutput) out += (*frame)->payload;
      if ((*frame)->type == session::AttachFrameType::kExit) return out + "exit=" + (*frame)->payload;
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return out + "closed";
    reader.feed(std::string_view(buf, static_cast<size_t>(n)));
  }
  return out + "timeout";
}

// A client that asked for a diff and left at once: the next client, which
// gets the same descriptor number in the supervisor, is an `exec` and must
// get its own command's output, not the diff's answer (before: the export's
// file name and exit 0, and its command killed).
TEST_F(Detached, AnExecAfterAnAbandonedDiffGetsItsOwnOutput) {
  ASSERT_EQ(detach("reuse", "head -c 100000000 /dev/zero | tr '\\0' x > /workspace/big.bin; echo ready; sleep 600").exitCode, 0);
  for (int i = 0; i < 300 && airlock({"logs", "reuse"}).out.find("ready") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string dir = entry("reuse").value("dir", "");
  ASSERT_FALSE(dir.empty());
  {
    auto diff = session::connectAttachSocket(dir, "reuse");
    ASSERT_TRUE(diff) << diff.error().message;
    ASSERT_TRUE(writeAll(diff->get(), session::encodeAttachFrame(session::AttachFrameType::kDiff, {})));
  }  // gone while its export runs
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto exec = session::connectAttachSocket(dir, "reuse");
  ASSERT_TRUE(exec) << exec.error().message;
  session::ExecStart start;
  start.argv = {"sh", "-c", "sleep 2; echo exec-output"};
  ASSERT_TRUE(writeAll(exec->get(), session::encodeExecStart(start)));
  EXPECT_EQ(readFrames(exec->get()), "exec-output\nexit=0");
  bool left = false;
  for (int i = 0; i < 150; ++i) {  // the abandoned export's file goes when it ends
    left = false;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      left = left || e.path().filename().string().starts_with("diff-");
    if (!left) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_FALSE(left) << "an abandoned diff's export was left in the session";
}

/// KiB of a QEMU process's guest RAM (its memfd memory backend) resident on the host.
uint64_t guestResidentKib(pid_t qemu) {
  std::ifstream smaps("/proc/" + std::to_string(qemu) + "/smaps");
  uint64_t kib = 0;
  bool guestRam = false;
  for (std::string line; std::getline(smaps, line);) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < 17)
      guestRam = line.find("memfd:memory-backend") != std::string::npos;
    else if (guestRam && line.starts_with("Rss:"))
      kib += std::stoull(line.substr(4));
  }
  return kib;
}

// Memory an idle guest freed goes back to the host (free page reporting):
// 200 MiB touched and freed in the guest leaves the host's resident guest
// RAM where it was before, within seconds.
TEST_F(Detached, MemoryTheGuestFreedReturnsToTheHost) {
  ASSERT_EQ(detach("mem", "sleep 600", {"--memory", "512"}).exitCode, 0);
  auto qemu = processesNamed("qemu-system-x86_64", state_);
  ASSERT_EQ(qemu.size(), 1u);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const uint64_t idle = guestResidentKib(qemu[0]);
  ASSERT_GT(idle, 0u);
  auto touched = airlock({"exec", "mem", "--", "sh", "-c", "dd if=/dev/zero of=/dev/null bs=200M count=1 2>&1"});
  ASSERT_EQ(touched.exitCode, 0) << touched.out << touched.err;
  uint64_t now = 0;
  for (int i = 0; i < 100; ++i) {
    now = guestResidentKib(qemu[0]);
    if (now < idle + (32 << 10)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_LT(now, idle + (32 << 10)) << "idle " << idle / 1024 << " MiB; 200 MiB freed in the guest, still "
                                    << now / 1024 << " MiB resident after 20 s";
}

/// A TCP service on the host's 127.0.0.1 that greets every client with
/// "host-service" and closes.
class HostService {
 public:
  HostService() {
    sock_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int one = 1;
    ::setsockopt(sock_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(sock_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(sock_.get(), 8) != 0)
      return;
    ::getsockname(sock_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        Fd c(::accept4(sock_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c || stop_) return;
        (void)!::write(c.get(), "host-service\n", 13);
      }
    });
  }
  ~HostService() {
    stop_ = true;
    ::shutdown(sock_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  Fd sock_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Two running sessions reach the host only through their own --host-port
// mappings, and each other not even through the other's published port:
// every probe both ways, with the allowed paths checked to work first.
TEST_F(Detached, TwoSessionsReachTheHostOnlyThroughTheirOwnPorts) {
  HostService host;
  ASSERT_NE(host.port(), 0);
  const std::string hostPort = std::to_string(host.port());
  const uint16_t publishA = freeLoopbackPort(), publishB = freeLoopbackPort();
  ASSERT_NE(publishA, publishB);
  ASSERT_EQ(detach("iso-a", "nc -ll -p 8000 -e echo from-a",
                   {"--host-port", hostPort, "--publish", std::to_string(publishA) + ":8000"})
                .exitCode, 0);
  ASSERT_EQ(detach("iso-b", "nc -ll -p 8000 -e echo from-b", {"--publish", std::to_string(publishB) + ":8000"})
                .exitCode, 0);
  // The allowed paths: the host reaches each published service, A its host port.
  std::string fromA, fromB;
  for (int i = 0; i < 100 && (fromA != "from-a\n" || fromB != "from-b\n"); ++i) {
    fromA = readFromTcp("127.0.0.1", publishA);
    fromB = readFromTcp("127.0.0.1", publishB);
    if (fromA != "from-a\n" || fromB != "from-b\n") std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(fromA, "from-a\n");
  ASSERT_EQ(fromB, "from-b\n");
  auto probe = [&](const std::string& from, const std::string& port) {
    return airlock({"exec", from, "--", "sh", "-c", "echo | nc -w 3 10.0.2.2 " + port + " 2>&1; true"}).out;
  };
  EXPECT_NE(probe("iso-a", hostPort).find("host-service"), std::string::npos) << "A's own --host-port";
  // Everything else: B to A's host port, each to the other's published port.
  EXPECT_EQ(probe("iso-b", hostPort).find("host-service"), std::string::npos) << "B used A's --host-port";
  EXPECT_EQ(probe("iso-b", std::to_string(publishA)).find("from-a"), std::string::npos) << "B reached A";
  EXPECT_EQ(probe("iso-a", std::to_string(publishB)).find("from-b"), std::string::npos) << "A reached B";
  // Nor the host's loopback directly, nor the guests each other at their address.
  auto direct = airlock({"exec", "iso-b", "--", "sh", "-c",
                         "for a in 127.0.0.1:" + hostPort + " 10.0.2.15:8000 192.0.2.1:" + hostPort +
                             "; do echo | nc -w 3 ${a%:*} ${a#*:} 2>&1; done; true"}).out;
  EXPECT_EQ(direct.find("host-service"), std::string::npos) << direct;
  EXPECT_EQ(direct.find("from-a"), std::string::npos) << direct;
}

// With egress the supervisor runs the proxy and DNS threads; `stop` (SIGTERM
// to it) must reach the command through the supervisor, never end the
// process: the session ends with its changes kept, not `dead`.
TEST_F(Detached, StopWithTheEgressFirewallKeepsTheChanges) {
  ASSERT_EQ(detach("net", "echo kept > /workspace/kept.txt; trap 'exit 9' TERM; echo ready; "
                          "while true; do sleep 1; done",
                   {"--egress-profile", "locked"})
                .exitCode,
            0);
  for (int i = 0; i < 300 && airlock({"logs", "net"}).out.find("ready") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (int i = 0; i < 3; ++i) {
    auto stopped = airlock({"stop", "net"});
    EXPECT_EQ(stopped.exitCode, 0) << stopped.err;
  }
  auto e = entry("net");
  EXPECT_EQ(e["state"], "pending review") << e.dump() << slurp(e["dir"].get<std::string>() + "/session.log");
  EXPECT_EQ(e["exit_code"], 9) << e.dump();
  EXPECT_EQ(airlock({"review", "net", "--review=auto"}).exitCode, 0);
  EXPECT_EQ(slurp(ws_ + "/kept.txt"), "kept\n");
}

// Ctrl-C while `run -d` starts the session: the supervisor (in a session
// of its own, out of the terminal's reach) is told, stops preparing and
// removes what it made, as a foreground run does; `run -d` waits for that
// and ends with 130. Before, the session went on starting and ran.
TEST_F(Detached, CtrlCWhileItStartsLeavesNothing) {
  const std::string out = state_ + "/run-d.out";
  pid_t pid = startAirlock({"run-image", "-d", "--rootfs", testRootfs(), "-w", ws_, "--name", "early", "--", "sh", "-c",
                            "echo x > /workspace/x.txt; sleep 600"},
                           out, {{"XDG_STATE_HOME", state_}});
  ASSERT_GT(pid, 0);
  bool booting = false;  // its VM boots: seconds under TCG before the command runs
  for (int i = 0; i < 1200 && !booting; ++i) {
    booting = !processesNamed("qemu-system-x86_64", state_).empty();
    if (!booting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(booting) << slurp(out);
  ASSERT_EQ(kill(pid, SIGINT), 0);
  int status = -1;
  for (int i = 0; i < 1200 && waitpid(pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (status == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "run -d did not end within 120 s of Ctrl-C: " << slurp(out);
  }
  const std::string said = slurp(out);
  ASSERT_TRUE(WIFEXITED(status)) << said;
  EXPECT_EQ(WEXITSTATUS(status), 130) << said;
  EXPECT_NE(said.find("interrupted: stopping and removing what this run made"), std::string::npos)
      << "the supervisor did not hear it while it prepared: " << said;
  EXPECT_NE(said.find("interrupted (INT) before"), std::string::npos) << said;
  EXPECT_NE(said.find("nothing was kept"), std::string::npos) << said;
  EXPECT_EQ(said.find("early\n"), std::string::npos) << "the session was started: " << said;
  EXPECT_TRUE(entry("early").is_null()) << airlock({"ls", "--all"}).out;
  EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty()) << "the VM outlived the interrupted start";
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/x.txt"));
  auto again = detach("early", "true");
  EXPECT_EQ(again.exitCode, 0) << "the interrupted session's name is not free: " << again.err;
}

// No daemon: a supervisor killed with SIGKILL takes its VM with it, but not
// the agent's changes: its janitor keeps the VM's disk in the session, which
// waits for review (rm refuses it); the first diff exports them from that
// disk, the review lands them, and rm cleans up.
TEST_F(Detached, AKilledSupervisorLeavesNoVmAndKeepsItsChanges) {
  ASSERT_EQ(detach("doomed", "echo x > /workspace/x.txt; echo written; sleep 600").exitCode, 0);
  for (int i = 0; i < 300 && airlock({"logs", "doomed"}).out.find("written") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The guest writes dirty pages back within about 2 s (the kernel's own
  // default is 30 s); 10 s leaves room for a starved vCPU under TCG (4 s
  // once lost the file's data on a loaded machine: it came back empty).
  std::this_thread::sleep_for(std::chrono::seconds(10));
  auto e = entry("doomed");
  ASSERT_FALSE(e.is_null());
  ASSERT_GT(e.value("created", 0), 0);
  const std::string dir = e["dir"].get<std::string>();
  std::string meta = slurp(dir + "/session.json");
  pid_t owner = nlohmann::json::parse(meta)["owner"].get<pid_t>();
  ASSERT_GT(owner, 1);
  ASSERT_EQ(kill(owner, SIGKILL), 0);
  // Its disk is kept: the session waits for a review, not dead.
  EXPECT_TRUE(waitForState("doomed", "pending review")) << entry("doomed").dump();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = processesNamed("qemu-system-x86_64", state_).empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the VM outlived its supervisor";
  // Its janitor (vm/janitor.h) removes the VM's run directory soon after,
  // keeping the scratch disk, which holds the agent's changes, in the session.
  for (int i = 0; i < 100 && !leftoverRunDirs(state_).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(std::filesystem::exists(dir + "/scratch.ext4"));
  EXPECT_EQ(airlock({"rm", "doomed"}).exitCode, 64) << "rm discarded the kept changes without -f";
  // The image it booted is the session's own (a hard link): removing it
  // from the cache (`image rm`, `system prune`) leaves the rescue its image.
  EXPECT_EQ(slurp(dir + "/root-image"), dir + "/root.img\n");
  struct stat image {};
  ASSERT_EQ(::stat((dir + "/root.img").c_str(), &image), 0);
  EXPECT_GE(image.st_nlink, 2u) << "not a link of the cached image";
  // The changes are exported from that disk by the first diff or review.
  auto diff = airlock({"diff", "doomed", "--stat"});
  EXPECT_EQ(diff.exitCode, 0) << diff.err;
  EXPECT_NE(diff.out.find("x.txt"), std::string::npos) << diff.out << diff.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/scratch.ext4")) << "the kept disk outlived its export";
  EXPECT_FALSE(std::filesystem::exists(dir + "/root.img")) << "the image's link outlived the export";
  EXPECT_FALSE(std::filesystem::exists(dir + "/attach.sock")) << "the dead supervisor's socket was left";
  EXPECT_EQ(entry("doomed")["state"], "pending review");
  EXPECT_TRUE(processesNamed("qemu-system-x86_64", state_).empty()) << "the export's VM outlived it";
  auto review = airlock({"review", "doomed", "--review=auto"});
  EXPECT_EQ(review.exitCode, 0) << review.err;
  EXPECT_EQ(slurp(ws_ + "/x.txt"), "x\n");
  auto rm = airlock({"rm", "doomed"});
  EXPECT_EQ(rm.exitCode, 0) << rm.err;
  EXPECT_EQ(slurp(ws_ + "/shared.txt"), "original\n");
}

}  // namespace
}  // namespace airlock::test
