#pragma once
// Untrusted text (file content, names, guest messages) made safe to print on
// a terminal: nothing in the result can move the cursor, hide, reorder or
// recolor text. Notation (also in README "Reading a diff"):
//   \xNN         a byte: C0 controls (ESC, BS, CR, ...), DEL, and every byte
//                that is not part of valid UTF-8 (raw C1 bytes 0x80-0x9f too)
//   \uNNNN       a code point that is invisible, reorders text, or looks
//                like nothing or like a plain space: C1 controls
//                (U+0080-U+009F), bidi controls (U+061C, U+200E/F,
//                U+202A-U+202E, U+2066-U+2069), zero-width and invisible
//                formatting (U+00AD, U+034F, U+180B-U+180F, U+200B-U+200D,
//                U+2060-U+2064, U+206A-U+206F, U+FEFF, U+FFF0-U+FFFC),
//                variation selectors (U+FE00-U+FE0F), blank letters (Hangul
//                fillers U+115F U+1160 U+3164 U+FFA0, Khmer U+17B4/5, braille
//                blank U+2800), spaces other than ' ' (U+00A0, U+1680,
//                U+2000-U+200A, U+202F, U+205F, U+3000), line/paragraph
//                separators U+2028/U+2029, private use (U+E000-U+F8FF) and
//                noncharacters (U+FDD0-U+FDEF, U+xFFFE/F)
//   \UNNNNNNNN   the same beyond the BMP: musical formatting
//                (U+1D173-U+1D17A), tag characters (U+E0000-U+E007F),
//                variation selectors (U+E0100-U+E01EF), private use planes
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
