#include "common/terminal_text.h"

#include "common/visible_text.h"

namespace airlock {

std::string TerminalTextFilter::feed(std::string_view bytes) {
  std::string out;
  VisibleOptions opt;
  opt.keepTabs = true;
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    // CAN and SUB cancel any sequence; a newline inside one ends it too, so
    // an unterminated sequence cannot swallow the rest of the output; and
    // a string sequence (a title, a hyperlink) is cut off after 4 KiB.
    if (state_ != State::kText && (c == 0x18 || c == 0x1a || c == '\n' || ++sequence_ > 4096)) {
      state_ = State::kText;
      if (c != '\n') continue;
    }
    if (state_ == State::kText) sequence_ = 0;
    switch (state_) {
      case State::kText:
        if (c == 0x1b) {
          state_ = State::kEscape;
        } else if (c == '\n') {
          out += visibleText(line_, opt) + "\n";
          line_.clear();
        } else if (c == '\t' || (c >= 0x20 && c != 0x7f)) {
          line_ += ch;
        }  // other C0 controls and DEL: dropped
        break;
      case State::kEscape:
        // ESC [ starts a CSI; ESC ] P X ^ _ a string ended by BEL or ST;
        // intermediates (0x20-0x2f) continue; anything else ends it.
        if (c == '[') state_ = State::kCsi;
        else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') state_ = State::kString;
        else if (c < 0x20 || c > 0x2f) state_ = State::kText;
        break;
      case State::kCsi:
        if (c >= 0x40 && c <= 0x7e) state_ = State::kText;
        break;
      case State::kString:
        if (c == 0x07) state_ = State::kText;
        else if (c == 0x1b) state_ = State::kStringEscape;
        break;
      case State::kStringEscape:
        state_ = c == '\\' ? State::kText : State::kString;
        break;
    }
  }
  return out;
}

std::string TerminalTextFilter::finish() {
  if (line_.empty()) return "";
  VisibleOptions opt;
  opt.keepTabs = true;
  std::string out = visibleText(line_, opt) + "\n";
  line_.clear();
  return out;
}

}  // namespace airlock
