#pragma once
// A terminal's output (a detached agent's pty, SessionLayout::output())
// turned into plain lines for `airlock logs`: escape sequences (CSI, OSC,
// DCS and the other ESC forms, ECMA-48; ended by CAN, SUB or a newline,
// and at most 4 KiB) are dropped, carriage returns and
// the other C0 controls too, and each line is passed through visibleText(),
// so nothing the guest wrote can drive the reader's terminal.

#include <string>
#include <string_view>

namespace airlock {

/// Filters a terminal byte stream fed in pieces (a sequence may be split
/// between two pieces).
class TerminalTextFilter {
 public:
  /// The complete lines (each ending in '\n') that `bytes` finished.
  std::string feed(std::string_view bytes);
  /// The last, unfinished line ("" when there is none), with a '\n'.
  std::string finish();

 private:
  enum class State { kText, kEscape, kCsi, kString, kStringEscape };
  State state_ = State::kText;
  size_t sequence_ = 0;  ///< bytes of the escape sequence so far
  std::string line_;
};

}  // namespace airlock
