#include "vm/console_log.h"

#include "common/thread_signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>

namespace airlock::vm {

ConsoleDrain::ConsoleDrain(Fd stream, Fd log, ConsoleLimits limits)
    : stream_(std::move(stream)), log_(std::move(log)), limits_(limits), headLeft_(limits.headBytes) {
  thread_ = std::thread([this] { loop(); });
}

ConsoleDrain::~ConsoleDrain() {
  ::shutdown(stream_.get(), SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<ConsoleDrain>> ConsoleDrain::start(Fd stream, const std::string& logPath,
                                                          ConsoleLimits limits) {
  Fd log(::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log) return fail("cannot create the console log {}: {}", logPath, errnoText(errno));
  return std::make_unique<ConsoleDrain>(std::move(stream), std::move(log), limits);
}

void ConsoleDrain::loop() {
  blockSignalsInThisThread();
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(stream_.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    received_ += static_cast<uint64_t>(n);
    append(std::string_view(buf, static_cast<size_t>(n)));
  }
}

void ConsoleDrain::append(std::string_view data) {
  if (headLeft_ > 0) {
    size_t n = std::min(headLeft_, data.size());
    (void)writeAll(log_.get(), data.substr(0, n));
    headLeft_ -= n;
    data.remove_prefix(n);
  }
  if (data.empty()) return;
  (void)writeAll(log_.get(), data);
  tail_.append(data);
  if (tail_.size() <= 2 * limits_.tailBytes) return;
  // Keep the newest tailBytes: rewrite the file after the head.
  dropped_ += tail_.size() - limits_.tailBytes;
  tail_.erase(0, tail_.size() - limits_.tailBytes);
  auto head = static_cast<off_t>(limits_.headBytes);
  if (::ftruncate(log_.get(), head) != 0 || ::lseek(log_.get(), head, SEEK_SET) != head) return;
  (void)writeAll(log_.get(), fmt::format("\n[airlock: {} bytes of console output dropped here]\n", dropped_));
  (void)writeAll(log_.get(), tail_);
}

std::vector<std::string> tailLines(const std::string& path, size_t count, size_t maxBytes, size_t maxLineBytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  auto size = static_cast<uint64_t>(st.st_size);
  uint64_t from = size > maxBytes ? size - maxBytes : 0;
  std::string text(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(fd.get(), text.data(), text.size(), static_cast<off_t>(from));
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  std::deque<std::string> lines;
  size_t pos = 0;
  if (from > 0) {  // the first line read is partial: drop it unless it is all there is
    size_t nl = text.find('\n');
    if (nl != std::string::npos) pos = nl + 1;
  }
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl;
    std::string line = text.substr(pos, std::min(end - pos, maxLineBytes));
    if (end - pos > maxLineBytes) line += "...";
    lines.push_back(std::move(line));
    if (lines.size() > count) lines.pop_front();
    pos = end + 1;
  }
  return {lines.begin(), lines.end()};
}

}  // namespace airlock::vm
