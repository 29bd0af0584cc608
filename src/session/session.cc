#include "session/session.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/sha256.h"

namespace airlock::session {
namespace {

std::string newId() {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::random_device rd;
  return fmt::format("{}-{:04x}", stamp, rd() & 0xffff);
}

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const std::string& workspace, bool wait) {
  char* real = realpath(workspace.c_str(), nullptr);
  if (!real) return failWith(64, "workspace {} does not exist: {}", workspace, errnoText(errno));
  std::unique_ptr<Session> s(new Session());
  s->workspace_ = real;
  free(real);
  std::string locks = stateDir() + "/locks";
  if (auto r = makeDirs(locks, 0700); !r) return std::unexpected(r.error());
  std::string lockPath = locks + "/" + sha256Hex(s->workspace_).substr(0, 16) + ".lock";
  s->lock_.reset(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!s->lock_) return fail("cannot open the workspace lock {}: {}", lockPath, errnoText(errno));
  if (flock(s->lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    auto holder = readFile(lockPath, 4096);
    std::string who = holder && !holder->empty() ? " (session " + *holder + ")" : "";
    if (!wait)
      return failWith(exit_code::kBusy, "another airlock session is running on {}{}; wait for it to finish, or pass --wait",
                      s->workspace_, who);
    std::fprintf(stderr, "airlock: waiting for the other session on %s%s\n", s->workspace_.c_str(), who.c_str());
    if (flock(s->lock_.get(), LOCK_EX) != 0) return fail("cannot lock {}: {}", lockPath, errnoText(errno));
  }
  s->id_ = newId();
  if (ftruncate(s->lock_.get(), 0) == 0) (void)!pwrite(s->lock_.get(), s->id_.data(), s->id_.size(), 0);
  s->dir_ = stateDir() + "/sessions/" + s->id_;
  if (auto r = makeDirs(s->dir_, 0700); !r) return std::unexpected(r.error());
  s->log_.reset(::open((s->dir_ + "/session.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  s->log("session " + s->id_ + " on " + s->workspace_);
  return s;
}

Session::~Session() {
  endPhase();
  for (const auto& path : scratch_) (void)removeTree(path);
  if (lock_) (void)!ftruncate(lock_.get(), 0);
}

void Session::phase(const std::string& name, const std::string& line) {
  endPhase();
  current_ = name;
  started_ = std::chrono::steady_clock::now();
  log(name + ": " + line);
  if (!quiet_) std::fprintf(stderr, "airlock: %s\n", line.c_str());
}

void Session::endPhase() {
  if (current_.empty()) return;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  phases_.emplace_back(current_, seconds);
  log(fmt::format("{} took {:.2f} s", current_, seconds));
  current_.clear();
}

void Session::log(const std::string& line) {
  if (!log_) return;
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", std::localtime(&now));
  writeAll(log_.get(), std::string(stamp) + " " + line + "\n");
}

std::string Session::timings() const {
  std::string out;
  double total = 0;
  for (const auto& [name, seconds] : phases_) {
    out += fmt::format("  {:<10} {:>7.2f} s\n", name, seconds);
    total += seconds;
  }
  out += fmt::format("  {:<10} {:>7.2f} s\n", "total", total);
  return out;
}

}  // namespace airlock::session
