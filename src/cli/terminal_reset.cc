#include "cli/terminal_reset.h"

#include <termios.h>
#include <unistd.h>

#include "common/fd.h"

namespace airlock::cli {

void resetTerminal(int fd) {
  if (::isatty(fd)) (void)writeAll(fd, kTerminalReset);
}

void prepareReviewTerminal(int fd) {
  resetTerminal(fd);
  ::tcflush(fd, TCIFLUSH);
}

}  // namespace airlock::cli
