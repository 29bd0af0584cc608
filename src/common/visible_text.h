#pragma once
// Untrusted text (file content, names, guest messages) made safe to print on
// a terminal: nothing in the result can move the cursor, hide, reorder or
// recolor text. Notation (also in README "Reading a diff"):
//   \xNN         a byte: C0 controls (ESC, BS, CR, ...), DEL, and every byte
//                that is not part of valid UTF-8 (raw C1 bytes 0x80-0x9f too)
//   \uNNNN       a code point that is invisible or reorders text: C1 controls
//                (U+0080-U+009F), bidi controls (U+061C, U+200E/F,
//                U+202A-U+202E, U+2066-U+2069), zero-width and invisible
//                formatting (U+00AD, U+180E, U+200B-U+200D, U+2060-U+2064,
//                U+206A-U+206F, U+FEFF, U+FFF9-U+FFFB), line/paragraph
//                separators U+2028/U+2029
//   \UNNNNNNNN   the same beyond the BMP (tag characters U+E0000-U+E007F)
// Everything else (printable ASCII, other valid UTF-8) is kept as is.

#include <string>
#include <string_view>

namespace airlock {

/// How visibleText() escapes.
struct VisibleOptions {
  bool keepTabs = false;         ///< leave '\t' as is (diff content)
  bool escapeBackslash = false;  ///< '\' as \x5c, so the result reads back unambiguously (names)
  std::string_view markOn;       ///< written before each escape (e.g. an SGR inverse), "" for none
  std::string_view markOff;      ///< written after each escape
};

/// `text` with every character above escaped; `*escaped` (when given) is set
/// to whether anything was (a backslash under escapeBackslash does not count).
std::string visibleText(std::string_view text, const VisibleOptions& opt = {}, bool* escaped = nullptr);

/// True when `text` has a byte outside ASCII (a name that may be a homoglyph
/// of another: Cyrillic 'а' for Latin 'a').
bool hasNonAscii(std::string_view text);

}  // namespace airlock
