// The client side of a running detached session's export (session/
// supervisor.h, kDiff): the request, the answer's frames, the file.

#include "cli/running_export.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "session/attach_frames.h"
#include "session/supervisor.h"

namespace airlock::cli {

using session::AttachFrameType;

Result<Fd> exportRunningChanges(const std::string& dir, const std::string& name) {
  auto sock = session::connectAttachSocket(dir, name);
  if (!sock) return std::unexpected(sock.error());
  std::string request = session::encodeAttachFrame(AttachFrameType::kDiff, {});
  // A supervisor that closes its socket before answering is ending (a
  // connection it had not yet accepted when its loop ended is reset): the
  // caller waits for the end and shows what the session then holds.
  auto ending = [&] { return failWith(exit_code::kBusy, "session {} is ending", name); };
  if (!writeAll(sock->get(), request)) {
    if (errno == EPIPE || errno == ECONNRESET) return ending();
    return fail("cannot reach session {}: {}", name, errnoText(errno));
  }
  session::AttachFrameReader reader;
  std::string file, errors;
  bool answered = false;
  char buf[4096];
  for (;;) {
    auto frame = reader.next();
    if (!frame) return std::unexpected(frame.error());
    if (!*frame) {
      ssize_t n = ::read(sock->get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 && !answered && (n == 0 || errno == ECONNRESET)) return ending();
      if (n <= 0)
        return failWith(exit_code::kVmFailed,
                        "lost the connection to session {} during its export (airlock ls "
                        "shows its state)",
                        name);
      answered = true;
      reader.feed(std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    const session::AttachFrame& f = **frame;
    if (f.type == AttachFrameType::kOutput) {
      file = f.payload;
    } else if (f.type == AttachFrameType::kStderr) {
      errors += f.payload;
    } else if (f.type == AttachFrameType::kExit) {
      int code = std::atoi(f.payload.c_str());
      if (code != 0) {
        while (!errors.empty() && errors.back() == '\n') errors.pop_back();
        if (errors.starts_with("airlock: ")) errors.erase(0, 9);
        return failWith(code, "{}", errors.empty() ? "the session could not export its changes" : errors);
      }
      break;
    }
  }
  // The name is the supervisor's own mkstemps() result in the session directory.
  if (!file.starts_with("diff-") || !file.ends_with(".tar") || file.find('/') != std::string::npos || file.size() > 64)
    return failWith(exit_code::kInternal, "session {} answered with an unexpected file name", name);
  const std::string path = dir + "/" + file;
  Fd tar(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  int openErrno = errno;
  ::unlink(path.c_str());
  if (!tar) return fail("cannot open {}: {}", path, errnoText(openErrno));
  return tar;
}

}  // namespace airlock::cli
